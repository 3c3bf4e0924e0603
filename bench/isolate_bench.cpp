// Measures run_in_fresh_isolate alone (no process, no MCP): the per-call floor of the V8 core.
#include <v8.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fixtures/markethub/fixture_server.h"
#include "openapi/document.h"
#include "sandbox/isolate_runner.h"
#include "sandbox/v8_platform.h"

using namespace codemode;

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::stoi(argv[1]) : 2000;
  const std::string code = argc > 2 ? argv[2] : "async () => 1 + 1";
  if (const char* flags = std::getenv("V8_EXTRA_FLAGS")) v8::V8::SetFlagsFromString(flags);
  sandbox::ensure_v8_initialized();
  auto loaded = openapi::parse_json(fixtures::markethub_openapi_json());
  config::Limits limits;
  limits.cpu_ms = 5000;
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    const auto start = std::chrono::steady_clock::now();
    sandbox::RunRequest request{sandbox::Tool::search, code,    &limits,
                                &*loaded.document,     nullptr, nullptr};
    auto outcome = sandbox::run_in_fresh_isolate(request);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
    if (!outcome.ok) {
      std::fprintf(stderr, "%s\n", outcome.error_message.c_str());
      return 1;
    }
  }
  std::sort(ms.begin(), ms.end());
  double sum = 0;
  for (double v : ms) sum += v;
  std::printf("n=%d p50=%.3f p90=%.3f p99=%.3f mean=%.3f ms\n", n, ms[n / 2], ms[n * 9 / 10],
              ms[n * 99 / 100], sum / n);
}
