// The sandbox process side: what the addon (addon.cpp) runs on node's main thread once node has
// loaded it.
//
// The daemon starts each sandbox process (channel/process_contract.h) in its new namespaces, with
// an environment of TZ alone, /dev/null on stdin, stdout and (unless it logs at debug level)
// stderr, its end of a socketpair as descriptor 3 and, when there is a document, its sealed image
// as descriptor 4; every other descriptor is closed before exec. The process then locks itself
// down (lockdown.h) and serves calls over the channel (channel/frames.h) until the channel
// closes, and never returns to node's event loop. It never sees a credential or a socket of the
// daemon: its only way out is a FetchRequest that the daemon's gateway judges.
//
// Threads: the main thread reads the channel and does nothing else: it hands each Run to a call
// thread, each fetch reply to the call that waits for it, each Cancel to the call's token. A call
// thread runs one call at a time in a fresh isolate, and up to Init::concurrency run at once;
// each has its watchdog thread, and V8 has its workers. Exit status: 0 when the channel closes, or
// one of the codes below, which the daemon turns into the call's error.
#pragma once

#include <signal.h>

#include "channel/process_contract.h"
#include "isolate/isolate_runner.h"

namespace codemode::isolate {

struct ChildOptions {
  // What the daemon entered for the process before exec (its last argument).
  channel::Namespaces namespaces;
  ContextHook extend_context = nullptr;  // test addons only; the shipped addon passes none
};

// Runs the sandbox process until its channel closes; returns its exit status.
int child_main(const ChildOptions& options = {});

}  // namespace codemode::isolate
