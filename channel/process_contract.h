// What a sandbox process and the daemon that starts it agree on besides the frames (frames.h):
// how the process is started, which descriptors it finds open, and what its exit status means.
// The daemon (sandbox/process.cpp, sandbox/engine.h) builds the command line, enters the
// namespaces and sets the descriptors up before exec, and turns the exit status into the call's
// error; the process (isolate/addon.cpp, isolate/child.cpp) reads them and exits with them.
//
// A sandbox process is the pinned node binary (cmake/NodeEngine.cmake) running an addon:
//   node <engine flags> [--jitless] -e <boot> <addon.node> --namespaces=<what>
// with an environment of its own making (engine_environment()), nothing inherited.
#pragma once

#include <cerrno>
#include <optional>
#include <string>
#include <string_view>

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
// The node that loaded the addon is not the one the addon was built against (its version or its
// V8's); nothing ran. The daemon says which it expected.
inline constexpr int kExitWrongEngine = 90;

// The namespaces the daemon entered for the process between fork and exec. A user namespace can
// only be entered by a single-threaded process, and node has started its threads before the
// addon runs, so the daemon's forked child enters them and the process is told what became of
// them in its last argument. `error` is the errno of the refusal (0 when all were entered).
struct Namespaces {
  enum class Entered { all, without_user, none };
  Entered entered = Entered::none;
  int error = 0;
};

inline constexpr std::string_view kNamespacesArgument = "--namespaces=";

// "--namespaces=all", "--namespaces=without-user:1", "--namespaces=none:1".
inline std::string namespaces_argument(Namespaces namespaces) {
  std::string out(kNamespacesArgument);
  switch (namespaces.entered) {
    case Namespaces::Entered::all:
      return out + "all";
    case Namespaces::Entered::without_user:
      out += "without-user:";
      break;
    case Namespaces::Entered::none:
      out += "none:";
      break;
  }
  return out + std::to_string(namespaces.error);
}

// The argument as namespaces_argument() writes it; nullopt for anything else.
inline std::optional<Namespaces> parse_namespaces_argument(std::string_view argument) {
  if (!argument.starts_with(kNamespacesArgument)) return std::nullopt;
  argument.remove_prefix(kNamespacesArgument.size());
  if (argument == "all") return Namespaces{Namespaces::Entered::all, 0};
  Namespaces out;
  if (argument.starts_with("without-user:")) {
    out.entered = Namespaces::Entered::without_user;
    argument.remove_prefix(13);
  } else if (argument.starts_with("none:")) {
    out.entered = Namespaces::Entered::none;
    argument.remove_prefix(5);
  } else {
    return std::nullopt;
  }
  if (argument.empty() || argument.size() > 4) return std::nullopt;
  for (char c : argument) {
    if (c < '0' || c > '9') return std::nullopt;
    out.error = out.error * 10 + (c - '0');
  }
  return out;
}

}  // namespace codemode::channel
