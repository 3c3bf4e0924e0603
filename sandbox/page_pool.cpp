#include "sandbox/page_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>

namespace codemode::sandbox {
namespace {
constexpr std::size_t kCannotPool = std::numeric_limits<std::size_t>::max();
constexpr std::size_t kMaxEvictions = 16;  // per FreePages
}  // namespace

RecyclingPageAllocator::RecyclingPageAllocator(v8::PageAllocator* system,
                                               std::size_t max_pooled_bytes,
                                               std::size_t max_resident_bytes)
    : system_(system),
      max_pooled_bytes_(max_pooled_bytes),
      max_resident_bytes_(max_resident_bytes),
      page_size_(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))) {}

std::size_t RecyclingPageAllocator::AllocatePageSize() { return system_->AllocatePageSize(); }
std::size_t RecyclingPageAllocator::CommitPageSize() { return system_->CommitPageSize(); }
void RecyclingPageAllocator::SetRandomMmapSeed(int64_t seed) { system_->SetRandomMmapSeed(seed); }
void* RecyclingPageAllocator::GetRandomMmapAddr() { return system_->GetRandomMmapAddr(); }

void* RecyclingPageAllocator::AllocatePages(void* hint, std::size_t length, std::size_t alignment,
                                            Permission permissions) {
  void* found = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto [first, last] = pool_.equal_range(length);
    auto pick = last;
    for (auto it = first; it != last; ++it) {
      if (it->second.address == hint) {  // V8 asks for the code range where it was before
        pick = it;
        break;
      }
      const auto address = reinterpret_cast<std::uintptr_t>(it->second.address);
      if (pick == last && (alignment == 0 || address % alignment == 0)) pick = it;
    }
    if (pick != last) {
      found = pick->second.address;
      stats_.pooled_bytes -= length;
      stats_.resident_bytes -= pick->second.resident;
      ++stats_.reused;
      pool_.erase(pick);
    } else {
      ++stats_.mapped;
    }
  }
  if (found == nullptr) return system_->AllocatePages(hint, length, alignment, permissions);
  // Pooled regions are inaccessible and zero; a request for access gets it now.
  if (permissions != kNoAccess && permissions != kNoAccessWillJitLater &&
      !system_->SetPermissions(found, length, permissions)) {
    system_->FreePages(found, length);
    return system_->AllocatePages(hint, length, alignment, permissions);
  }
  return found;
}

std::size_t RecyclingPageAllocator::scrub(void* address, std::size_t length) {
  // No allocation here: V8 frees pages when memory has run out, and nothing may throw into it.
  constexpr std::size_t kWindowPages = 4096;
  unsigned char residency[kWindowPages];
  auto* base = static_cast<unsigned char*>(address);
  const std::size_t pages = (length + page_size_ - 1) / page_size_;
  std::size_t resident = 0;
  bool writable = false;
  for (std::size_t window = 0; window < pages; window += kWindowPages) {
    const std::size_t count = std::min(kWindowPages, pages - window);
    unsigned char* window_start = base + window * page_size_;
    if (::mincore(window_start, count * page_size_, residency) != 0) return kCannotPool;
    for (std::size_t i = 0; i < count;) {
      const bool in_core = residency[i] & 1;
      std::size_t end = i;
      while (end < count && (residency[end] & 1) == in_core) ++end;
      unsigned char* run = window_start + i * page_size_;
      const std::size_t bytes = (end - i) * page_size_;
      if (in_core) {
        if (!writable && ::mprotect(address, length, PROT_READ | PROT_WRITE) != 0) {
          return kCannotPool;
        }
        writable = true;
        std::memset(run, 0, bytes);
        resident += bytes;
      } else if (::madvise(run, bytes, MADV_DONTNEED) != 0) {
        // Not in core is not the same as zero: a swapped-out page still holds its bytes.
        return kCannotPool;
      }
      i = end;
    }
  }
  // Not system_->SetPermissions(kNoAccess): V8's discards the pages, which is what pooling avoids.
  if (::mprotect(address, length, PROT_NONE) != 0) return kCannotPool;
  return resident;
}

bool RecyclingPageAllocator::FreePages(void* address, std::size_t length) {
  {
    std::lock_guard lock(mutex_);
    if (auto trimmed = trimmed_.find(address); trimmed != trimmed_.end()) {
      length = trimmed->second;  // the tail ReleasePages kept is freed with the rest
      trimmed_.erase(trimmed);
    }
  }
  if (length > max_pooled_bytes_) return system_->FreePages(address, length);
  const std::size_t resident = scrub(address, length);
  if (resident == kCannotPool || resident > max_resident_bytes_) {
    std::lock_guard lock(mutex_);
    ++stats_.released;
    return system_->FreePages(address, length);
  }
  struct Evicted {
    void* address;
    std::size_t length;
  } evicted[kMaxEvictions];
  std::size_t evictions = 0;
  {
    std::lock_guard lock(mutex_);
    try {
      pool_.emplace(length, Region{address, resident, ++clock_});
    } catch (const std::bad_alloc&) {
      ++stats_.released;
      return system_->FreePages(address, length);
    }
    stats_.pooled_bytes += length;
    stats_.resident_bytes += resident;
    ++stats_.kept;
    // Oldest first out: a size V8 no longer asks for must not hold the pool.
    while (stats_.pooled_bytes > max_pooled_bytes_ || stats_.resident_bytes > max_resident_bytes_) {
      auto oldest = pool_.begin();
      for (auto it = pool_.begin(); it != pool_.end(); ++it) {
        if (it->second.freed_at < oldest->second.freed_at) oldest = it;
      }
      stats_.pooled_bytes -= oldest->first;
      stats_.resident_bytes -= oldest->second.resident;
      ++stats_.released;
      evicted[evictions++] = Evicted{oldest->second.address, oldest->first};
      pool_.erase(oldest);
      if (evictions == kMaxEvictions) break;  // the next free evicts the rest
    }
  }
  for (std::size_t i = 0; i < evictions; ++i) {
    system_->FreePages(evicted[i].address, evicted[i].length);
  }
  return true;
}

bool RecyclingPageAllocator::ReleasePages(void* address, std::size_t length,
                                          std::size_t new_length) {
  // V8 shrinks a region it no longer needs whole (a chunk down to its used part). Unmapping the
  // tail would leave a region of a size nobody asks for again; instead the tail is made
  // inaccessible and stays with the region, so the whole region returns to the pool later.
  auto* tail = static_cast<char*>(address) + new_length;
  if (::mprotect(tail, length - new_length, PROT_NONE) != 0) {
    return system_->ReleasePages(address, length, new_length);
  }
  std::lock_guard lock(mutex_);
  auto [it, inserted] = trimmed_.emplace(address, length);
  if (!inserted) it->second = std::max(it->second, length);
  return true;
}

bool RecyclingPageAllocator::SetPermissions(void* address, std::size_t length,
                                            Permission permissions) {
  // V8's own discards the pages it makes inaccessible; they stay here, to be pooled with their
  // region. V8 never relies on their content afterwards (DecommitPages is for that).
  if (permissions == kNoAccess || permissions == kNoAccessWillJitLater) {
    return ::mprotect(address, length, PROT_NONE) == 0;
  }
  return system_->SetPermissions(address, length, permissions);
}

bool RecyclingPageAllocator::DiscardSystemPages(void* address, std::size_t size) {
  return system_->DiscardSystemPages(address, size);
}

bool RecyclingPageAllocator::DecommitPages(void* address, std::size_t size) {
  // Zero when committed again, as V8 requires, without giving the pages back.
  return scrub(address, size) != kCannotPool;
}

PagePoolStats RecyclingPageAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace codemode::sandbox
