// The heap_mb limit of a call's isolate: V8's heap constraints for it, the callbacks that stop
// the call when its heap holds more, and the budget of its ArrayBuffers, which live outside the
// heap. Internal to isolate/.
//
// Threads: the constraints and callbacks are set up and removed on the isolate's thread, where
// V8 also runs the callbacks; BudgetAllocator is called on V8's background threads too.
#pragma once

#include <v8.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>

#include "isolate/interrupts.h"

namespace codemode::isolate::detail {

// ArrayBuffer memory lives outside the V8 heap cap; this allocator gives it its own budget.
// Free() may run on V8's background threads, hence the atomic.
class BudgetAllocator final : public v8::ArrayBuffer::Allocator {
 public:
  explicit BudgetAllocator(std::size_t budget) : budget_(budget) {}
  void* Allocate(std::size_t length) override {
    if (!reserve(length)) return nullptr;
    void* p = std::calloc(std::max<std::size_t>(length, 1), 1);
    if (!p) used_ -= length;
    return p;
  }
  void* AllocateUninitialized(std::size_t length) override {
    if (!reserve(length)) return nullptr;
    void* p = std::malloc(std::max<std::size_t>(length, 1));
    if (!p) used_ -= length;
    return p;
  }
  void Free(void* data, std::size_t length) override {
    std::free(data);
    used_ -= length;
  }
  bool refused() const { return refused_.load(); }
  // Whether an allocation was refused since the last time this was asked.
  bool take_refusal() { return refusal_pending_.exchange(false); }

 private:
  bool reserve(std::size_t length) {
    if (used_.fetch_add(length) + length > budget_) {
      used_ -= length;
      refused_ = true;
      refusal_pending_ = true;
      return false;
    }
    return true;
  }
  const std::size_t budget_;
  std::atomic<std::size_t> used_{0};
  std::atomic<bool> refused_{false};
  std::atomic<bool> refusal_pending_{false};
};

// What the heap callbacks need: the call's interrupts, its ArrayBuffer budget, and heap_mb.
struct HeapWatch {
  Interrupts* interrupts;
  BudgetAllocator* allocator;
  std::size_t cap;  // bytes
};

// heap_mb (`cap`, in bytes) as V8's constraints of a new isolate (heap_guard.cpp says why they
// are not simply the cap).
void set_heap_constraints(v8::ResourceConstraints& constraints, std::size_t cap);

// Adds the callbacks that stop the call when its heap passes `watch->cap`: one after each
// collection, and V8's near-heap-limit callback. `watch` outlives them; unwatch_heap removes
// them before the isolate goes.
void watch_heap(v8::Isolate* isolate, HeapWatch* watch);
void unwatch_heap(v8::Isolate* isolate, HeapWatch* watch);

}  // namespace codemode::isolate::detail
