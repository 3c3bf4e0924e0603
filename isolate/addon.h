// What every addon of ours does when node loads it (addon.cpp: the shipped sandbox process; the
// test addons: the hooked sandbox process, the isolate tests, the corpus check, the benchmark).
// On node's main thread, inside node's context, in the addon's init.
#pragma once

#include <string>
#include <vector>

namespace v8 {
class Context;
template <class T>
class Local;
}  // namespace v8

namespace codemode::isolate {

// Checks that the node that loaded the addon is the one it was built against (node's and V8's
// versions; channel::kExitWrongEngine otherwise, with the two named on stderr), attaches to its
// platform (v8_platform.h) and sets the signals a sandbox process wants. False: the wrong node.
bool attach_to_node(v8::Local<v8::Context> context);

// The addon's own arguments: what follows the addon's path on node's command line.
std::vector<std::string> addon_arguments(v8::Local<v8::Context> context);

// For an addon that is a program (the isolate tests, the corpus check, the benchmark; run by
// build/engine/run-addon): attaches, runs `program` with `name` and the addon's arguments as
// argv, and leaves the process with its status. Never returns to node.
[[noreturn]] void run_as_program(v8::Local<v8::Context> context, const char* name,
                                 int (*program)(int argc, char** argv));

}  // namespace codemode::isolate
