// The V8 core alone (no process, no channel, no MCP), call after call, as a sandbox process runs
// it: while one call's isolate is set up, run and disposed, a prepared isolate of the other tool
// stays alive (a sandbox process always holds one per tool).
//
//   build/engine/run-addon build/engine/isolate_bench.node [CALLS] [CODE] [execute]
//
// Default: 2000 search calls of `async () => 1 + 1`. With `execute` the calls are execute
// calls, with fetch() and the rest of the execute globals (no upstream: a fetch() fails), and
// the isolate kept alive is a search one.
//
// Prints wall time per call (p50/p90/p99) and of the call's run() alone (p50), CPU per call (user
// and system, from getrusage) and page faults per call. It runs inside node, as the sandbox
// process does (V8 exists only there), with the same flags (run-addon).
#include <sys/resource.h>

#include <node.h>
#include <v8.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "fixtures/markethub/fixture_server.h"
#include "isolate/addon.h"
#include "isolate/isolate_runner.h"
#include "openapi/document.h"

using namespace codemode;

namespace {
double ms(const timeval& t) {
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_usec) / 1e3;
}

int run_bench(int argc, char** argv) {
  const int n = argc > 1 ? std::stoi(argv[1]) : 2000;
  const std::string code = argc > 2 ? argv[2] : "async () => 1 + 1";
  auto loaded = openapi::parse_json(fixtures::markethub_openapi_json());
  const auto image =
      std::get<openapi::DocumentImage>(openapi::DocumentImage::build(*loaded.document));
  config::Limits limits;
  limits.cpu_ms = 5000;
  const isolate::PrepareRequest search{channel::Tool::search, limits, &image,
                                       isolate::FetchGlobal::absent, nullptr};
  const isolate::PrepareRequest execute{channel::Tool::execute, limits, nullptr,
                                        isolate::FetchGlobal::present, nullptr};
  const bool executing = argc > 3 && std::string_view(argv[3]) == "execute";
  const isolate::PrepareRequest& each = executing ? execute : search;
  isolate::PreparedIsolate other(executing ? search : execute);

  std::vector<double> wall, running;
  wall.reserve(n);
  running.reserve(n);
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  for (int i = 0; i < n; ++i) {
    const auto start = std::chrono::steady_clock::now();
    channel::Outcome outcome;
    {
      isolate::PreparedIsolate isolate(each);
      const auto run_start = std::chrono::steady_clock::now();
      outcome = isolate.run(code, nullptr, nullptr);
      running.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - run_start)
              .count());
    }
    wall.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    if (!outcome.ok) {
      (void)std::fprintf(stderr, "%s\n", outcome.error_message.c_str());
      return 1;
    }
  }
  getrusage(RUSAGE_SELF, &after);
  std::sort(wall.begin(), wall.end());
  std::sort(running.begin(), running.end());
  std::printf(
      "n=%d wall p50=%.3f p90=%.3f p99=%.3f ms (the call's run() p50=%.3f) | cpu/call "
      "user=%.3f sys=%.3f ms | faults/call %.1f\n",
      n, wall[n / 2], wall[n * 9 / 10], wall[n * 99 / 100], running[n / 2],
      (ms(after.ru_utime) - ms(before.ru_utime)) / n,
      (ms(after.ru_stime) - ms(before.ru_stime)) / n,
      static_cast<double>(after.ru_minflt - before.ru_minflt) / n);
  return 0;
}

}  // namespace

NODE_MODULE_INIT(/* exports, module, context */) {
  isolate::run_as_program(context, "isolate_bench", run_bench);
}
