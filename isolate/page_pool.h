// Where V8 gets its pages: the operating system's, with the pages of disposed isolates kept for
// the next one.
//
// A fresh isolate per call maps its heap (256 KiB chunks, a 64 MiB code range) and unmaps it all
// at Dispose(). Each mapping costs system calls, a page fault per 4 KiB touched, and an unmap
// that shoots down TLB entries on every CPU the process ran on: about a third of a short call's
// CPU time. RecyclingPageAllocator keeps freed regions (up to a budget) and zeroes what of them
// is resident; the next isolate's request for a region of that size gets one of them, with no
// fault for the pages already there. Small data chunks stay writable, in the pool and while V8
// holds them (its revoking or shrinking one changes nothing until it is freed), so that they
// cost no permission change; code and big regions are made inaccessible. A region V8 shrinks
// (ReleasePages) keeps its tail, so that it returns to the pool at the size V8 asks for. An isolate
// never sees another's bytes: what it gets is zero, as fresh mappings are, and as V8 requires of a
// new region.
//
// Threads: V8 calls it from any thread (the isolate's, its GC and compiler workers); every member
// takes the one mutex. Process-wide, created once by ensure_v8_initialized() and never destroyed
// before V8 is (regions it handed out may be freed until then).
#pragma once

#include <v8-platform.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace codemode::isolate {

struct PagePoolStats {
  std::size_t reused = 0;          // AllocatePages served from the pool
  std::size_t mapped = 0;          // AllocatePages passed to the system
  std::size_t kept = 0;            // FreePages that went into the pool
  std::size_t released = 0;        // FreePages passed to the system (pool full)
  std::size_t pooled_bytes = 0;    // address space in the pool now
  std::size_t resident_bytes = 0;  // of that, resident (zeroed) pages
  std::size_t scrubbed_bytes = 0;  // address space FreePages looked at and zeroed, in all
};

class RecyclingPageAllocator final : public v8::PageAllocator {
 public:
  // `system`: the allocator that really maps (V8's own); must outlive this one.
  // `max_pooled_bytes`: address space the pool may hold; `max_resident_bytes`: resident pages
  // it may hold (they count in the process's RSS). A region that does not fit is unmapped.
  RecyclingPageAllocator(v8::PageAllocator* system, std::size_t max_pooled_bytes,
                         std::size_t max_resident_bytes);

  std::size_t AllocatePageSize() override;
  std::size_t CommitPageSize() override;
  void SetRandomMmapSeed(int64_t seed) override;
  void* GetRandomMmapAddr() override;
  void* AllocatePages(void* hint, std::size_t length, std::size_t alignment,
                      Permission permissions) override;
  bool FreePages(void* address, std::size_t length) override;
  bool ReleasePages(void* address, std::size_t length, std::size_t new_length) override;
  bool SetPermissions(void* address, std::size_t length, Permission permissions) override;
  bool DiscardSystemPages(void* address, std::size_t size) override;
  bool DecommitPages(void* address, std::size_t size) override;

  PagePoolStats stats() const;

  // For tests: bytes in the pool that break its promise, resident pages that are not zero and
  // resident pages outside the part ever accessible; both 0 when it keeps it. Makes each
  // inaccessible region readable for the moment it reads it.
  struct Audit {
    std::size_t not_zero = 0;
    std::size_t resident_untouched = 0;
  };
  Audit audit();

 private:
  // The part of a region that was ever accessible since it was mapped, as offsets [begin, end):
  // outside it no page was ever writable, so none holds a byte or is resident. V8 uses the
  // start of a 64 MiB code range only; scrubbing just this part spares mincore, madvise and
  // mprotect over the tens of MiB it never touched.
  struct Extent {
    std::size_t begin;
    std::size_t end;
    void add(std::size_t from, std::size_t to) {
      if (from >= to) return;
      if (begin >= end) {
        begin = from;
        end = to;
      } else {
        begin = std::min(begin, from);
        end = std::max(end, to);
      }
    }
  };
  // What is known of a region V8 holds: whether all of it is writable now (so a request to make
  // it writable is already met), whether any of it was ever executable (code: pooled
  // inaccessible, never handed out writable), and what of it was ever accessible.
  struct Live {
    std::uintptr_t start;
    std::size_t length;
    bool all_writable;
    bool executable_ever;
    Extent touched;
  };
  // A region in the pool: zero, and writable (a small data chunk) or inaccessible.
  struct Region {
    void* address;
    std::size_t resident;    // bytes
    std::uint64_t freed_at;  // clock_ when it entered the pool
    bool writable;
    Extent touched;
  };
  enum class Access { unknown, writable, none };
  // Pooled writable only up to this size; bigger regions (a 64 MiB code range, large objects)
  // are pooled inaccessible, whatever they held.
  static constexpr std::size_t kMaxWritablePooled = std::size_t{1} << 20;

  // Zeroes the resident pages of a region V8 is done with (`now`: what its pages allow, as far
  // as known) and leaves it `leave`. Returns the bytes resident, or kCannotPool (page_pool.cpp)
  // when a system call refused.
  std::size_t scrub(void* address, std::size_t length, Access now, Access leave);
  Live* find_live(const void* address);  // under mutex_
  // Never executable and at most kMaxWritablePooled: pooled writable, and, while all of it is
  // writable, left so when V8 revokes or shrinks away any of it.
  static bool small_data_chunk(const Live& live) {
    return !live.executable_ever && live.length <= kMaxWritablePooled;
  }
  void remember(void* address, Live live);  // under mutex_

  v8::PageAllocator* system_;
  const std::size_t max_pooled_bytes_;
  const std::size_t max_resident_bytes_;
  const std::size_t page_size_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, Region> pool_;  // by length
  std::uint64_t clock_ = 0;
  std::map<void*, std::size_t> trimmed_;  // shrunk by ReleasePages: start -> length as mapped
  std::map<std::uintptr_t, Live> live_;   // handed out, by start
  PagePoolStats stats_;
};

}  // namespace codemode::isolate
