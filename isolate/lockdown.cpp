#include "isolate/lockdown.h"

#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>
#include <system_error>

namespace codemode::isolate::lockdown {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

std::string errno_text(int error) { return std::generic_category().message(error); }

bool set_limit(int resource, rlim_t value) {
  const rlimit limit{value, value};
  return ::setrlimit(resource, &limit) == 0;
}

// Bytes mapped by the process now (VmSize).
std::size_t mapped_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0;
  statm >> pages;
  return pages * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

bool in_new_mount_namespace = false;

}  // namespace

void record_namespaces(channel::Namespaces namespaces, Report& report) {
  switch (namespaces.entered) {
    case channel::Namespaces::Entered::all:
      in_new_mount_namespace = true;
      report.push_back("namespaces: on (user, network without interfaces, mount, ipc)");
      return;
    case channel::Namespaces::Entered::without_user:
      in_new_mount_namespace = true;
      report.push_back("namespaces: partial (network, mount, ipc; user refused: " +
                       errno_text(namespaces.error) + ")");
      return;
    case channel::Namespaces::Entered::none:
      report.push_back("namespaces: off (unshare refused: " + errno_text(namespaces.error) + ")");
      return;
  }
}

void limit_resources(unsigned cpu_seconds, Report& report) {
  std::string failed;
  if (!set_limit(RLIMIT_CORE, 0)) failed += " core";
  // The channel, stdin/out/err on /dev/null, and a few V8 may open while starting.
  if (!set_limit(RLIMIT_NOFILE, 16)) failed += " nofile";
  if (!set_limit(RLIMIT_CPU, cpu_seconds)) failed += " cpu";
  if (failed.empty()) {
    report.push_back("rlimits: on (no core dumps, 16 open files, " + std::to_string(cpu_seconds) +
                     " s CPU per process)");
  } else {
    report.push_back("rlimits: partial (refused:" + failed + ")");
  }
}

void limit_address_space(std::size_t headroom_bytes, Report& report) {
  if (kAddressSanitizer) {
    report.push_back("address space: off (AddressSanitizer build)");
    return;
  }
  const std::size_t cap = mapped_bytes() + headroom_bytes;
  if (set_limit(RLIMIT_AS, cap)) {
    report.push_back("address space: on (" + std::to_string(cap >> 20) + " MiB)");
  } else {
    report.push_back("address space: off (" + errno_text(errno) + ")");
  }
}

void empty_root(Report& report) {
  if (!in_new_mount_namespace) {
    report.push_back("empty root: off (no mount namespace)");
    return;
  }
  // Nothing propagates back to the host's mounts, then a fresh tmpfs becomes the whole tree.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      ::mount("none", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555") !=
          0 ||
      ::chroot("/tmp") != 0 || ::chdir("/") != 0) {
    report.push_back("empty root: off (" + errno_text(errno) + ")");
    return;
  }
  report.push_back("empty root: on (chroot into an empty tmpfs)");
}

void restrict_syscalls(Report& report) {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    report.push_back("no_new_privs: off (" + errno_text(errno) + ")");
  } else {
    report.push_back("no_new_privs: on");
  }

  // Anything not listed fails with EPERM (V8 copes with a refused call better than with a dead
  // process); the calls that only an attacker makes kill the process outright.
  scmp_filter_ctx filter = ::seccomp_init(SCMP_ACT_ERRNO(EPERM));
  if (filter == nullptr) {
    report.push_back("seccomp: off (seccomp_init failed)");
    return;
  }
  int rc = 0;
  auto allow = [&](int syscall) {
    if (rc == 0) rc = ::seccomp_rule_add(filter, SCMP_ACT_ALLOW, syscall, 0);
  };
  for (int syscall :
       {// the channel and stdio (/dev/null)
        SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev), SCMP_SYS(recvfrom),
        SCMP_SYS(sendto), SCMP_SYS(recvmsg), SCMP_SYS(sendmsg), SCMP_SYS(poll), SCMP_SYS(ppoll),
        SCMP_SYS(close), SCMP_SYS(fstat), SCMP_SYS(lseek),
        // memory
        SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mprotect), SCMP_SYS(mremap), SCMP_SYS(madvise),
        SCMP_SYS(mincore), SCMP_SYS(brk),
        // threads, time, signals
        SCMP_SYS(futex), SCMP_SYS(set_robust_list), SCMP_SYS(rseq), SCMP_SYS(sched_yield),
        SCMP_SYS(sched_getaffinity), SCMP_SYS(nanosleep), SCMP_SYS(clock_nanosleep),
        SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres), SCMP_SYS(gettimeofday), SCMP_SYS(getpid),
        SCMP_SYS(gettid), SCMP_SYS(getrusage), SCMP_SYS(getrandom), SCMP_SYS(rt_sigaction),
        SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn), SCMP_SYS(sigaltstack),
        SCMP_SYS(rt_sigtimedwait), SCMP_SYS(restart_syscall), SCMP_SYS(exit), SCMP_SYS(exit_group),
        SCMP_SYS(membarrier),
        // the watchdog's timers (watchdog.cpp): they signal a thread of this process
        SCMP_SYS(timer_create), SCMP_SYS(timer_settime), SCMP_SYS(timer_gettime),
        SCMP_SYS(timer_delete),
        // node's threads: its platform's delayed-task thread waits on its own event loop's epoll
        // descriptor (V8 posts delayed GC work there), and abseil's mutexes read their own
        // thread's scheduling policy
        SCMP_SYS(epoll_wait), SCMP_SYS(epoll_pwait), SCMP_SYS(epoll_pwait2), SCMP_SYS(epoll_ctl),
        SCMP_SYS(sched_getparam), SCMP_SYS(sched_getscheduler)}) {
    allow(syscall);
  }
  // fstat() is newfstatat(fd, "", AT_EMPTY_PATH) in glibc 2.36: descriptors only, never paths.
  if (rc == 0) {
    rc = ::seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(newfstatat), 1,
                            SCMP_A3(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH));
  }
  // Threads only: clone() must share the address space and be a thread of this process.
  if (rc == 0) {
    rc = ::seccomp_rule_add(
        filter, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
        SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD | CLONE_VM, CLONE_THREAD | CLONE_VM));
  }
  // glibc tries clone3 first and falls back to clone on ENOSYS; clone3's flags sit in memory
  // the filter cannot read, so it is never allowed.
  if (rc == 0) rc = ::seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  // Thread names, and signals to this process only (abort() raises SIGABRT at itself).
  if (rc == 0) {
    rc = ::seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
                            SCMP_A0(SCMP_CMP_EQ, PR_SET_NAME, 0));
  }
  for (int syscall : {SCMP_SYS(tgkill), SCMP_SYS(rt_tgsigqueueinfo)}) {
    if (rc == 0) {
      rc = ::seccomp_rule_add(filter, SCMP_ACT_ALLOW, syscall, 1,
                              SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(::getpid()), 0));
    }
  }
  // io_uring: node's event loops made rings before the lockdown, and an operation submitted
  // through a ring is not a system call the filter sees (it would open files, connect sockets).
  // Nothing of ours or node's submits once the addon holds the main thread, so only an attacker
  // does.
  for (int syscall :
       {SCMP_SYS(execve), SCMP_SYS(execveat), SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv),
        SCMP_SYS(process_vm_writev), SCMP_SYS(io_uring_setup), SCMP_SYS(io_uring_enter),
        SCMP_SYS(io_uring_register)}) {
    if (rc == 0) rc = ::seccomp_rule_add(filter, SCMP_ACT_KILL_PROCESS, syscall, 0);
  }
  // Threads V8 already started are covered too (TSYNC).
  if (rc == 0) rc = ::seccomp_attr_set(filter, SCMP_FLTATR_CTL_TSYNC, 1);
  if (rc == 0) rc = ::seccomp_load(filter);
  ::seccomp_release(filter);
  if (rc != 0) {
    report.push_back("seccomp: off (" + errno_text(-rc) + ")");
    return;
  }
  report.push_back(
      "seccomp: on (allow-list; no socket, connect, open, execve, ptrace, fork, io_uring; others "
      "EPERM)");
}

}  // namespace codemode::isolate::lockdown
