#include "isolate/page_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

namespace codemode::isolate {
namespace {
constexpr std::size_t kCannotPool = std::numeric_limits<std::size_t>::max();
constexpr std::size_t kMaxEvictions = 16;  // per FreePages

bool executable(v8::PageAllocator::Permission permissions) {
  return permissions == v8::PageAllocator::kReadWriteExecute ||
         permissions == v8::PageAllocator::kReadExecute ||
         permissions == v8::PageAllocator::kNoAccessWillJitLater;
}
bool accessible(v8::PageAllocator::Permission permissions) {
  return permissions != v8::PageAllocator::kNoAccess &&
         permissions != v8::PageAllocator::kNoAccessWillJitLater;
}
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

RecyclingPageAllocator::Live* RecyclingPageAllocator::find_live(const void* address) {
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  auto it = live_.upper_bound(at);
  if (it == live_.begin()) return nullptr;
  --it;
  return at < it->first + it->second.length ? &it->second : nullptr;
}

void RecyclingPageAllocator::remember(void* address, Live live) {
  live.start = reinterpret_cast<std::uintptr_t>(address);
  try {
    live_.insert_or_assign(live.start, live);
  } catch (const std::bad_alloc&) {
    // Untracked, the region is freed the strict way (pooled inaccessible) and its permission
    // changes all reach the kernel: slower, never wrong.
  }
}

void* RecyclingPageAllocator::AllocatePages(void* hint, std::size_t length, std::size_t alignment,
                                            Permission permissions) {
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
  Live live{0, length, permissions == kReadWrite, executable(permissions), {0, 0}};
  if (accessible(permissions)) live.touched.add(0, length);
  auto map_fresh = [&] {
    ++stats_.mapped;
    void* fresh = system_->AllocatePages(hint, length, alignment, permissions);
    if (fresh != nullptr) remember(fresh, live);
    return fresh;
  };
  if (pick == last) return map_fresh();
  const Region region = pick->second;
  stats_.pooled_bytes -= length;
  stats_.resident_bytes -= region.resident;
  ++stats_.reused;
  pool_.erase(pick);
  // A writable pooled region (a small data chunk) is given as it is, also for kNoAccess: V8
  // commits such a chunk whole right after. Anything else gets the permissions asked for.
  const bool as_is = region.writable && (permissions == kReadWrite || permissions == kNoAccess);
  bool ready = true;
  if (as_is) {
    live.all_writable = true;
  } else if (!accessible(permissions)) {
    ready = !region.writable || ::mprotect(region.address, length, PROT_NONE) == 0;
  } else {
    ready = system_->SetPermissions(region.address, length, permissions);
  }
  if (!ready) {
    system_->FreePages(region.address, length);
    return map_fresh();
  }
  live.touched.add(region.touched.begin, region.touched.end);
  remember(region.address, live);
  return region.address;
}

std::size_t RecyclingPageAllocator::scrub(void* address, std::size_t length, Access now,
                                          Access leave) {
  // No allocation here: V8 frees pages when memory has run out, and nothing may throw into it.
  constexpr std::size_t kWindowPages = 4096;
  unsigned char residency[kWindowPages];
  auto* base = static_cast<unsigned char*>(address);
  const std::size_t pages = (length + page_size_ - 1) / page_size_;
  std::size_t resident = 0;
  bool writable = now == Access::writable;
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
  if (leave == Access::none && ::mprotect(address, length, PROT_NONE) != 0) return kCannotPool;
  if (leave == Access::writable && !writable &&
      ::mprotect(address, length, PROT_READ | PROT_WRITE) != 0) {
    return kCannotPool;
  }
  return resident;
}

bool RecyclingPageAllocator::FreePages(void* address, std::size_t length) {
  std::unique_lock lock(mutex_);
  if (auto trimmed = trimmed_.find(address); trimmed != trimmed_.end()) {
    length = trimmed->second;  // the tail ReleasePages kept is freed with the rest
    trimmed_.erase(trimmed);
  }
  // Unknown: treated as code that may have been touched anywhere, the strict way.
  Live live{0, length, false, true, {0, length}};
  if (auto it = live_.find(reinterpret_cast<std::uintptr_t>(address)); it != live_.end()) {
    live = it->second;
    live_.erase(it);
  }
  lock.unlock();
  if (length > max_pooled_bytes_) return system_->FreePages(address, length);
  // Small data chunks are pooled writable (no permission change when V8 takes them again),
  // whole; code, and big regions that V8 may reserve for anything, inaccessible, and of those
  // only the part that was ever accessible needs zeroing (the rest is untouched since mapped).
  const bool keep_writable = small_data_chunk(live);
  Extent part{0, length};
  if (!keep_writable) {
    part.begin = std::min(live.touched.begin, length) / page_size_ * page_size_;
    part.end = std::min(
        (std::min(live.touched.end, length) + page_size_ - 1) / page_size_ * page_size_, length);
    if (part.begin >= part.end) part = {0, 0};
  }
  const std::size_t resident =
      part.begin == part.end
          ? 0
          : scrub(static_cast<char*>(address) + part.begin, part.end - part.begin,
                  live.all_writable ? Access::writable : Access::unknown,
                  keep_writable ? Access::writable : Access::none);
  if (resident == kCannotPool || resident > max_resident_bytes_) {
    lock.lock();
    ++stats_.released;
    return system_->FreePages(address, length);
  }
  struct Evicted {
    void* address;
    std::size_t length;
  } evicted[kMaxEvictions];
  std::size_t evictions = 0;
  {
    lock.lock();
    try {
      pool_.emplace(length, Region{address, resident, ++clock_, keep_writable, part});
    } catch (const std::bad_alloc&) {
      ++stats_.released;
      return system_->FreePages(address, length);
    }
    stats_.pooled_bytes += length;
    stats_.resident_bytes += resident;
    stats_.scrubbed_bytes += part.end - part.begin;
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
    lock.unlock();
  }
  for (std::size_t i = 0; i < evictions; ++i) {
    system_->FreePages(evicted[i].address, evicted[i].length);
  }
  return true;
}

bool RecyclingPageAllocator::ReleasePages(void* address, std::size_t length,
                                          std::size_t new_length) {
  // V8 shrinks a region it no longer needs whole (a chunk down to its used part). Unmapping the
  // tail would leave a region of a size nobody asks for again; instead the tail stays with the
  // region, so the whole region returns to the pool later. The tail of a writable data chunk
  // stays as it is (V8 never touches it again; it is zeroed with the chunk when freed); any
  // other tail is made inaccessible.
  std::lock_guard lock(mutex_);
  Live* live = find_live(address);
  if (live == nullptr || !live->all_writable || !small_data_chunk(*live)) {
    auto* tail = static_cast<char*>(address) + new_length;
    if (::mprotect(tail, length - new_length, PROT_NONE) != 0) {
      // Shrunk for real: the tail is no longer part of the region.
      const bool released = system_->ReleasePages(address, length, new_length);
      if (released && live != nullptr) live->length = new_length;
      return released;
    }
    if (live != nullptr) live->all_writable = false;
  }
  auto [it, inserted] = trimmed_.emplace(address, length);
  if (!inserted) it->second = std::max(it->second, length);
  return true;
}

bool RecyclingPageAllocator::SetPermissions(void* address, std::size_t length,
                                            Permission permissions) {
  std::lock_guard lock(mutex_);
  Live* live = find_live(address);
  const std::size_t offset =
      live != nullptr ? reinterpret_cast<std::uintptr_t>(address) - live->start : 0;
  const bool whole = live != nullptr && offset == 0 && length >= live->length;
  if (live != nullptr && live->all_writable) {
    if (permissions == kReadWrite) return true;  // so it is
    // V8 revoking a small data chunk or a part of one (before freeing it, or to keep it
    // uncommitted): it never touches those pages again before it commits or frees them, and
    // never relies on their content, so they stay as they are until the chunk is freed and
    // zeroed. They hold only this isolate's own bytes.
    if (permissions == kNoAccess && small_data_chunk(*live)) return true;
  }
  bool done;
  if (!accessible(permissions)) {
    // V8's own discards the pages it makes inaccessible; they stay here, to be pooled with
    // their region. V8 never relies on their content afterwards (DecommitPages is for that).
    done = ::mprotect(address, length, PROT_NONE) == 0;
  } else {
    done = system_->SetPermissions(address, length, permissions);
  }
  if (done && live != nullptr) {
    if (accessible(permissions)) {
      live->touched.add(offset, std::min(offset + length, live->length));
    }
    live->all_writable = permissions == kReadWrite && (live->all_writable || whole);
    live->executable_ever = live->executable_ever || executable(permissions);
  }
  return done;
}

bool RecyclingPageAllocator::DiscardSystemPages(void* address, std::size_t size) {
  return system_->DiscardSystemPages(address, size);
}

bool RecyclingPageAllocator::DecommitPages(void* address, std::size_t size) {
  // Zero when committed again, as V8 requires, without giving the pages back.
  {
    std::lock_guard lock(mutex_);
    if (Live* live = find_live(address)) live->all_writable = false;
  }
  return scrub(address, size, Access::unknown, Access::none) != kCannotPool;
}

PagePoolStats RecyclingPageAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

RecyclingPageAllocator::Audit RecyclingPageAllocator::audit() {
  std::lock_guard lock(mutex_);
  Audit audit;
  std::vector<unsigned char> residency;
  for (const auto& [length, region] : pool_) {
    auto* bytes = static_cast<unsigned char*>(region.address);
    residency.resize(length / page_size_);
    if (::mincore(bytes, length, residency.data()) != 0) continue;
    if (!region.writable) ::mprotect(bytes, length, PROT_READ);
    for (std::size_t page = 0; page < residency.size(); ++page) {
      if ((residency[page] & 1) == 0) continue;
      const std::size_t offset = page * page_size_;
      if (offset < region.touched.begin || offset >= region.touched.end) {
        audit.resident_untouched += page_size_;
      }
      for (std::size_t i = 0; i < page_size_; ++i) {
        if (bytes[offset + i] != 0) ++audit.not_zero;
      }
    }
    if (!region.writable) ::mprotect(bytes, length, PROT_NONE);
  }
  return audit;
}

}  // namespace codemode::isolate
