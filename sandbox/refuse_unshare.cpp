// refuse_unshare PROGRAM [ARGS...]: runs PROGRAM under a seccomp filter that makes unshare()
// fail with EPERM, as Docker's default seccomp profile does. Tests only, never shipped: the
// filter survives exec and is inherited by every process PROGRAM starts, so a daemon's sandbox
// processes meet the refusal a container would give them (tests/e2e/require_layers.test.mjs).
#include <seccomp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <system_error>

int main(int argc, char** argv) {
  if (argc < 2) {
    (void)std::fprintf(stderr, "usage: refuse_unshare PROGRAM [ARGS...]\n");
    return 2;
  }
  // Everything is allowed but unshare; libseccomp sets no_new_privs first (unprivileged use).
  scmp_filter_ctx filter = ::seccomp_init(SCMP_ACT_ALLOW);
  const bool loaded =
      filter != nullptr &&
      ::seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 0) == 0 &&
      ::seccomp_load(filter) == 0;
  ::seccomp_release(filter);
  if (!loaded) {
    (void)std::fprintf(stderr, "refuse_unshare: the seccomp filter could not be loaded\n");
    return 3;
  }
  ::execv(argv[1], argv + 1);
  (void)std::fprintf(stderr, "refuse_unshare: %s: %s\n", argv[1],
                     std::generic_category().message(errno).c_str());
  return 127;
}
