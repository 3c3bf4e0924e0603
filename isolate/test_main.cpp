// The isolate tests' addon: Catch2's runner inside node (build/engine/run-addon isolate_test.node
// [catch arguments]), since V8 exists only there. ctest discovers and runs the tests through
// run-addon (CROSSCOMPILING_EMULATOR in isolate/CMakeLists.txt).
#define CATCH_CONFIG_RUNNER
#include <node.h>

#include <catch2/catch.hpp>

#include "isolate/addon.h"

namespace {
int run_tests(int argc, char** argv) { return Catch::Session().run(argc, argv); }
}  // namespace

NODE_MODULE_INIT(/* exports, module, context */) {
  codemode::isolate::run_as_program(context, "isolate_test", run_tests);
}
