// The V8 core of the sandbox: one tool call's code, run in a fresh isolate on the calling thread.
//
// run_in_fresh_isolate() creates an isolate, gives it the globals of the tools' contract
// (README.md, "What the code sees": console, timers, URL, ...; for `search` also `spec`),
// compiles the code as exactly one expression, calls the function it evaluates to, drives
// microtasks and timers until the returned promise settles or a limit trips, serialises the
// value and disposes the isolate. An isolate is never reused, so nothing a call does (mutating
// `spec`, Object.prototype, globalThis) is seen by the next one.
//
// Threads: the call runs entirely on the thread that calls it (a sandbox process's call thread); V8
// objects never leave it. While it runs, the calling thread's watchdog (two POSIX timers and a
// thread they signal, kept per thread) enforces cpu_ms on the thread's CPU clock and wall_ms; it is
// disarmed before the isolate is disposed. A CancelToken lets any other thread stop the call
// (call_control.h: the V8-free types the daemon's side shares).
//
// Errors: nothing the code does throws out of here; every failure is an Outcome with its kind.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "channel/call_control.h"
#include "channel/outcome.h"
#include "channel/tool.h"
#include "config/config.h"
#include "openapi/image.h"

namespace v8 {
class Context;
struct OOMDetails;
class Isolate;
template <class T>
class Local;
}  // namespace v8

namespace codemode::isolate {

// Test binaries only: adds globals to a context after the sandbox's own. The shipped binary
// never sets one; sandbox_hook_child (hook_child.cpp) does.
using ContextHook = void (*)(v8::Isolate*, v8::Local<v8::Context>);

struct RunRequest {
  channel::Tool tool = channel::Tool::search;
  std::string_view code;                        // already accepted by check_input()
  const config::Limits* limits = nullptr;       // required
  const openapi::DocumentImage* api = nullptr;  // search: its `spec` (SpecView); execute: unused
  channel::CancelToken* cancel = nullptr;       // optional
  const channel::Fetcher* fetcher = nullptr;    // execute: its fetch(); null: no fetch global
  ContextHook extend_context = nullptr;         // tests only
};

enum class FetchGlobal { absent, present };

// The code range every isolate of ours gets: 64 MiB, V8 10.2's default (V8 14's is 128 MiB, and
// a call's code uses the first few hundred KiB of it).
inline constexpr std::size_t kCodeRangeBytes = std::size_t{64} << 20;
// The address space one isolate reserves, for the sandbox process's cap (child.cpp): V8 14.6
// reserves the code range and 256 MiB more (measured: 8 isolates of a 64 MiB heap and code range
// grew a node process's VmSize by 2,570 MiB).
inline constexpr std::size_t kIsolateAddressSpace = kCodeRangeBytes + (std::size_t{256} << 20);

// What an isolate needs before its call's code is known.
struct PrepareRequest {
  channel::Tool tool = channel::Tool::search;
  config::Limits limits;
  const openapi::DocumentImage* api = nullptr;  // search: its `spec`; must outlive the isolate
  FetchGlobal fetch = FetchGlobal::absent;  // execute: install fetch() (run() then needs a Fetcher)
  ContextHook extend_context = nullptr;     // tests only
};

// A fresh isolate made ready ahead of its call: created with the call's limits, given its
// context, the sandbox's globals and (search) the `spec` root, but no code. run() then only
// compiles and runs the code (the set-up, about three quarters of a call's cost, is already
// paid), once; the destructor disposes the isolate. Never reused: one call per isolate. The
// whole life on one thread, and on that thread no other PreparedIsolate may be created while
// this one lives (`spec` keeps a per-thread pointer to its view).
class PreparedIsolate {
 public:
  explicit PreparedIsolate(const PrepareRequest& request);
  ~PreparedIsolate();
  PreparedIsolate(const PreparedIsolate&) = delete;
  PreparedIsolate& operator=(const PreparedIsolate&) = delete;

  // Whether a call with this tool and these limits may run here.
  bool suits(channel::Tool tool, const config::Limits& limits) const;
  // As run_in_fresh_isolate(), with the code, cancel token and fetcher of the call, and
  // optionally how it waits (must outlive the call). wall_ms and cpu_ms count from here.
  channel::Outcome run(std::string_view code, channel::CancelToken* cancel,
                       const channel::Fetcher* fetcher, channel::Waiter* waiter = nullptr);

 private:
  struct Parts;
  PrepareRequest request_;
  std::unique_ptr<Parts> parts_;
  bool used_ = false;
};

// Sandbox processes only: what V8 calls when an isolate's heap cannot grow any further (by
// default it prints and aborts the process). Set once, before the first call.
void set_out_of_memory_handler(void (*handler)(const char* location,
                                               const v8::OOMDetails& details));

// Runs on the calling thread, in a process whose addon has attached to node (v8_platform.h).
//
// The code must be one expression evaluating to a function (async or not); the function is
// called with no arguments and its result, awaited when it is a promise, becomes
// Outcome::result_json (JSON.stringify; undefined -> "null"; BigInt -> its decimal string).
// Failure messages (Outcome::error_message, tests pin them):
//   compile: SyntaxError: <V8's message>            the code does not parse as one expression
//   compile: the code must evaluate to a function ... it evaluated to something else
//   runtime: <Name>: <message>                      an uncaught exception or rejection
//   runtime: the promise never settled              pending, and no timer left to wake it
//   runtime: result is not JSON-serialisable: ...   e.g. a cycle
//   runtime: cancelled                              CancelToken::cancel()
//   timeout: cpu limit 50 ms exceeded | timeout: wall limit 10000 ms exceeded
//   memory: heap limit 64 MB exceeded | memory: ArrayBuffer limit 64 MB exceeded
channel::Outcome run_in_fresh_isolate(const RunRequest& request);

}  // namespace codemode::isolate
