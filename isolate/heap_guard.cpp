#include "isolate/heap_guard.h"

#include <v8.h>

#include <algorithm>
#include <cstddef>

#include "isolate/host_functions.h"
#include "isolate/interrupts.h"

namespace codemode::isolate::detail {

namespace {

// How far past heap_mb the near-heap-limit callback lets the heap grow while a termination is on
// its way. V8 cannot fail an allocation: a limit it cannot allocate under aborts the process, and
// one uninterruptible builtin (String.prototype.split, JSON.stringify of a huge string) may need
// up to 1 GiB in one object on top of what is live. Past this, V8 aborts, as it would anyway.
constexpr std::size_t kMaxHeapOvershoot = 3072 * kMB;

// The least room V8's limit leaves above heap_mb's share of the old generation (see
// set_heap_constraints).
constexpr std::size_t kHeapMargin = 16 * kMB;

// After each collection: a heap holding more than heap_mb stops the call (V8's limit, above,
// is not reached by code that grows its heap step by step).
void heap_cap_after_gc(v8::Isolate* isolate, v8::GCType /*type*/, v8::GCCallbackFlags /*flags*/,
                       void* data) {
  auto* watch = static_cast<HeapWatch*>(data);
  v8::HeapStatistics stats;
  isolate->GetHeapStatistics(&stats);
  if (stats.used_heap_size() > watch->cap) watch->interrupts->trip(Stop::heap);
}

size_t near_heap_limit(void* data, size_t current_limit, size_t initial_limit) {
  auto* watch = static_cast<HeapWatch*>(data);
  Interrupts* interrupts = watch->interrupts;
  v8::HeapStatistics stats;
  interrupts->isolate()->GetHeapStatistics(&stats);
  // V8 (since 11) also asks when an ArrayBuffer's backing store was refused and its last-resort
  // collection freed too little, whatever the heap holds. That is the buffer budget's refusal,
  // which the code sees as a RangeError (and the call as `memory: ArrayBuffer limit` if nothing
  // catches it), not the heap's limit: the limit stays as it is.
  if (watch->allocator->take_refusal() && stats.used_heap_size() < current_limit / 2) {
    return current_limit;
  }
  interrupts->trip(Stop::heap);
  // V8 aborts the process unless the new limit covers what is already committed (one large
  // object can be admitted past the limit and promoted later) plus the allocation that is
  // waiting, which may be a doubling of something big: so grant twice the heap again. The
  // termination lands at the next interrupt check, and the isolate is then thrown away.
  const size_t committed = std::max(current_limit, stats.total_heap_size());
  const size_t wanted = committed + std::max<size_t>(2 * stats.total_heap_size(), 64 * kMB);
  return std::max(current_limit, std::min(wanted, initial_limit + kMaxHeapOvershoot));
}

}  // namespace

// heap_mb is the cap on what the isolate's heap holds after a collection (heap_cap_after_gc
// enforces it); V8's own limit on the old generation sits a margin above it. V8 asks the
// near-heap-limit callback only on the call's thread: an allocation on one of its background
// threads (a concurrent compiler's, a collection it requests) that finds the heap at V8's limit
// aborts the process, or trips a CHECK when two such threads ask for collections at once (V8
// 14.6's CollectionBarrier). With the margin, the cap stops the code while background threads
// still have room. V8's default split gives a small heap mostly to the young generation (6 of 8
// MB), which left a fresh context, 1.5 MB of old objects, at its limit before the code began:
// the young generation gets at most a quarter here.
void set_heap_constraints(v8::ResourceConstraints& constraints, std::size_t cap) {
  constraints.ConfigureDefaultsFromHeapSize(0, cap);
  const std::size_t young = std::min(constraints.max_young_generation_size_in_bytes(), cap / 4);
  const std::size_t old = cap - young;
  constraints.set_max_young_generation_size_in_bytes(young);
  constraints.set_max_old_generation_size_in_bytes(old + std::max(old, kHeapMargin));
}

void watch_heap(v8::Isolate* isolate, HeapWatch* watch) {
  isolate->AddNearHeapLimitCallback(near_heap_limit, watch);
  isolate->AddGCEpilogueCallback(heap_cap_after_gc, watch);
}

void unwatch_heap(v8::Isolate* isolate, HeapWatch* watch) {
  isolate->RemoveGCEpilogueCallback(heap_cap_after_gc, watch);
  isolate->RemoveNearHeapLimitCallback(near_heap_limit, 0);
}

}  // namespace codemode::isolate::detail
