// V8 inside node: the sandbox process is node's release binary running our addon (addon.cpp),
// and node has started V8 and its platform (node's MultiIsolatePlatform, whose worker threads run
// V8's background GC and compile jobs) before it loads the addon. V8's flags come from node's
// command line (channel/process_contract.h), so nothing here sets any.
//
// attach() records node's platform, once, on the main thread, before any isolate of ours exists.
// Every isolate of ours is then made and disposed through it: registered with a foreground task
// runner of its own (node's event loop never runs again once the addon holds the main thread),
// whose tasks the thread that owns the isolate runs (run_foreground_tasks) between microtask
// checkpoints, and unregistered and freed in the order node requires. Thread-safe after attach().
#pragma once

#include <cstddef>
#include <string_view>

namespace v8 {
class Context;
class Isolate;
class PageAllocator;
template <class T>
class Local;
}  // namespace v8

namespace codemode::isolate {

// The addon's init (main thread, once): records the platform of the node that loaded the addon.
void attach(v8::Local<v8::Context> node_context);

// Allocates an isolate and registers it with node's platform, not yet initialised: for
// v8::Isolate::Initialize or a v8::SnapshotCreator. Only dispose_isolate() disposes it.
v8::Isolate* allocate_isolate();

// Disposes an isolate of allocate_isolate(): V8's Dispose, node's UnregisterIsolate, the memory,
// and its foreground tasks, in node's order. On the thread that owns the isolate, not inside it.
void dispose_isolate(v8::Isolate* isolate);

// Runs the foreground tasks V8 has posted for `isolate` (finalisers, GC steps), not those they
// post in turn. On the thread that owns it, inside it, outside any script.
void run_foreground_tasks(v8::Isolate* isolate);

// The pool of heap regions kept mapped, zeroed, from one isolate for the next (v8_platform.cpp,
// "the region pool"): whether attach() could put it in this process, and how many regions it
// has handed out again.
struct RegionPoolStats {
  bool on = false;
  std::size_t reused = 0;
};
RegionPoolStats region_pool_stats();

// For tests: the V8 page allocator the pool is hooked into, null when it is off.
v8::PageAllocator* region_pool_allocator();

// The running V8's version, e.g. "14.6.202.34-node.40"; needs no isolate.
std::string_view v8_version();

}  // namespace codemode::isolate
