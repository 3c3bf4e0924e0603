// Whether V8 may compile JavaScript to machine code: the config's sandbox.jitless, as the daemon
// passes it to its sandbox processes. Plain data, for both sides (v8_platform.h acts on it).
#pragma once

namespace codemode::channel {

// `jitless` adds V8's --jitless: the interpreter only, and no page of the process is ever
// writable and executable, at a cost in speed.
enum class JitMode { enabled, jitless };

}  // namespace codemode::channel
