// Loads every API description under a directory the way the daemon does, opens each in a
// search isolate, and reports: how many load, every refusal with its reason, and the slowest.
// Exit 1 when any file crashes the check (it would not get here), hangs (ctest's timeout), is
// refused without a reason, or loads but its spec disagrees with the host's view of it.
//
//   build/engine/run-addon build/engine/corpus_check.node DIR
//
// An addon that runs inside node, as a sandbox process does: V8 exists only there.
#include <node.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "isolate/addon.h"
#include "isolate/isolate_runner.h"
#include "openapi/document.h"

namespace fs = std::filesystem;
using namespace codemode;

namespace {

int run_check(int argc, char** argv) {
  if (argc != 2 || !fs::is_directory(argv[1])) {
    std::cerr << "usage: corpus_check DIR (a directory of .json/.yaml API descriptions)\n";
    return 2;
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(argv[1])) {
    const auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".json" || ext == ".yaml" || ext == ".yml")) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  config::Limits limits;
  limits.cpu_ms = 2000;
  limits.wall_ms = 10000;
  limits.heap_mb = 512;

  std::size_t loaded = 0, mismatched = 0, unexplained = 0;
  std::map<std::string, std::size_t> reasons;  // first words of each refusal
  std::vector<std::pair<double, std::string>> slowest;
  for (const auto& file : files) {
    const auto started = std::chrono::steady_clock::now();
    auto result = openapi::load_file(file);
    const double load_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    slowest.emplace_back(load_ms, file.filename().string());
    if (!result.document) {
      if (result.problems.empty()) {
        ++unexplained;
        std::cout << "REFUSED WITHOUT A REASON: " << file << "\n";
      }
      for (const auto& problem : result.problems) {
        std::cout << "refused: " << problem << "\n";
        const std::string reason = problem.substr(problem.find(": ") + 2);
        ++reasons[reason.substr(0, std::min<std::size_t>(reason.size(), 48))];
      }
      continue;
    }
    ++loaded;
    // The isolate's view must agree with the host's: the same number of paths, and the first
    // path's operations readable through their refs (not serialised whole: shared schemas
    // make some, e.g. Stripe's, expand past any heap when every ref is copied out).
    const std::string code =
        "async () => { const keys = Object.keys(spec.paths); "
        "const first = keys.length ? spec.paths[keys[0]] : {}; "
        "const ops = Object.values(first).filter((op) => op && typeof op === 'object'); "
        "return [keys.length, ops.every((op) => Object.keys(op).length >= 0)]; }";
    auto image = openapi::DocumentImage::build(*result.document);
    if (auto* error = std::get_if<std::string>(&image)) {
      ++mismatched;
      std::cout << "NO IMAGE: " << file << ": " << *error << "\n";
      continue;
    }
    channel::Outcome outcome = isolate::run_in_fresh_isolate(
        isolate::RunRequest{channel::Tool::search, code, &limits,
                            &std::get<openapi::DocumentImage>(image), nullptr, nullptr});
    const std::string expected = "[" + std::to_string(result.document->path_count) + ",true]";
    if (!outcome.ok || outcome.result_json != expected) {
      ++mismatched;
      std::cout << "MISMATCH: " << file << ": "
                << (outcome.ok ? outcome.result_json : outcome.error_message) << " (expected "
                << expected << ")\n";
    }
  }
  std::sort(slowest.rbegin(), slowest.rend());
  std::cout << "\nslowest loads:\n";
  for (std::size_t i = 0; i < std::min<std::size_t>(5, slowest.size()); ++i) {
    std::cout << "  " << slowest[i].first << " ms  " << slowest[i].second << "\n";
  }
  std::cout << "refusal reasons:\n";
  for (const auto& [reason, count] : reasons) std::cout << "  " << count << "  " << reason << "\n";
  std::cout << "\n"
            << loaded << " of " << files.size() << " descriptions loaded; " << files.size() - loaded
            << " refused with a reason; " << unexplained << " refused without one; " << mismatched
            << " disagreed in the sandbox\n";
  return unexplained == 0 && mismatched == 0 ? 0 : 1;
}

}  // namespace

NODE_MODULE_INIT(/* exports, module, context */) {
  isolate::run_as_program(context, "corpus_check", run_check);
}
