// The engine the sandbox processes run, as the daemon sees it: node's pinned release binary and
// the addon built against it (cmake/NodeEngine.cmake, isolate/addon.cpp), in a folder named
// `engine` beside the daemon's own binary (build/engine in a build tree; the image's
// /usr/local/lib/codemode-mcp/engine beside /usr/local/lib/codemode-mcp/codemode-mcp). The daemon
// links no V8: it only knows where the engine is, how to start it, and which versions it was
// built with.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "channel/jit_mode.h"

namespace codemode::sandbox {

// `engine` beside the running binary (/proc/self/exe).
std::string default_engine_dir();

// What starts one sandbox process running `addon` (a file in `engine_dir`): the pinned node with
// the engine's flags, --jitless if asked, and the addon. The daemon's process start adds the
// namespaces argument (channel/process_contract.h).
std::vector<std::string> engine_command(const std::string& engine_dir, std::string_view addon,
                                        channel::JitMode jit);

// The environment a sandbox process starts with: TZ only (the daemon's zone by name, so that
// dates read no file after the lockdown), nothing inherited.
std::vector<std::string> engine_environment();

// Why `engine_dir` cannot start sandbox processes (no node, no addon), or nullopt.
std::optional<std::string> engine_problem(const std::string& engine_dir);

// The node and V8 the addon was built for (and checks at start: channel::kExitWrongEngine).
std::string_view engine_node_version();
std::string_view engine_v8_version();

// The shipped addon's file name.
inline constexpr std::string_view kIsolateAddon = "codemode_isolate.node";

}  // namespace codemode::sandbox
