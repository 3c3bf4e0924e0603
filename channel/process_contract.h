// What a sandbox process and the daemon that starts it agree on besides the frames (frames.h):
// which descriptors the process finds open, and what its exit status means. The daemon
// (sandbox/process.cpp) sets the descriptors up before exec and turns the exit status into the
// call's error; the process (isolate/child.cpp) reads them and exits with them.
#pragma once

namespace codemode::channel {

// The process's end of the socketpair the frames travel on.
inline constexpr int kChannelFd = 3;
// The document image (openapi/image.h), a sealed memfd, when Init says there is one.
inline constexpr int kImageFd = 4;

inline constexpr int kExitOutOfMemory = 86;  // V8 could not get memory (address-space rlimit)
inline constexpr int kExitBadMessage = 87;   // the daemon sent something undecodable
inline constexpr int kExitStartFailed = 88;  // no usable Init, or the document did not load
// A call ran on past cpu_ms in a builtin termination cannot stop; its Result was sent first.
inline constexpr int kExitRunaway = 89;

}  // namespace codemode::channel
