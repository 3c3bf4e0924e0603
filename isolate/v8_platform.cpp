#include "isolate/v8_platform.h"

#include <node.h>
#include <v8.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/check.h"

namespace codemode::isolate {
namespace {

// One isolate's foreground tasks: V8 posts them from any thread; the thread that owns the isolate
// runs them (run_foreground_tasks). Delayed and idle tasks are run as soon as that thread gets to
// them, or dropped with the isolate: an isolate lives for one call, whose own limits bound it.
class IsolateTasks final : public v8::TaskRunner, public node::IsolatePlatformDelegate {
 public:
  std::shared_ptr<v8::TaskRunner> GetForegroundTaskRunner() override { return self_.lock(); }
  bool IdleTasksEnabled() override { return false; }

  bool NonNestableTasksEnabled() const override { return true; }
  bool NonNestableDelayedTasksEnabled() const override { return true; }

  // The tasks posted so far; those they post wait for the next call.
  std::deque<std::unique_ptr<v8::Task>> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(tasks_, {});
  }

  void set_self(const std::shared_ptr<IsolateTasks>& self) { self_ = self; }

 protected:
  void PostTaskImpl(std::unique_ptr<v8::Task> task, const v8::SourceLocation&) override {
    push(std::move(task));
  }
  void PostNonNestableTaskImpl(std::unique_ptr<v8::Task> task, const v8::SourceLocation&) override {
    push(std::move(task));
  }
  void PostDelayedTaskImpl(std::unique_ptr<v8::Task> task, double,
                           const v8::SourceLocation&) override {
    push(std::move(task));
  }
  void PostNonNestableDelayedTaskImpl(std::unique_ptr<v8::Task> task, double,
                                      const v8::SourceLocation&) override {
    push(std::move(task));
  }
  void PostIdleTaskImpl(std::unique_ptr<v8::IdleTask>, const v8::SourceLocation&) override {}

 private:
  void push(std::unique_ptr<v8::Task> task) {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
  }

  std::weak_ptr<IsolateTasks> self_;
  std::mutex mutex_;
  std::deque<std::unique_ptr<v8::Task>> tasks_;
};

// node's V8 takes its page allocator from the platform, node's gives none, so V8 uses a
// v8::base::PageAllocator of its own (a static of node's binary) for every isolate's heap.
// Each isolate's old and trusted spaces start on fresh 256 KiB pages (V8's memory pool holds
// only new-space pages), which the builtins' deserialisation faults in, page by page, and its
// Dispose unmaps again: ~55 of an isolate's 69 page faults and one in five of its CPU cycles
// in the kernel. The region pool keeps such regions mapped, zeroed, for the next isolate, as the
// page pool of the V8 10.2 engine did for all of an isolate's memory.
//
// Its hook is V8's allocator object itself: its vtable pointer is swapped for a copy of the
// same vtable in which AllocatePages and FreePages (and every call that changes a region's
// mapping, which takes the region out of the pool) go through the pool first. The object is
// found by its vtable (exported by node) in node's writable data: node 26.12.1 holds two (V8's
// platform allocator and one more of V8's), both plain mmap, so both get the pool, and a region
// may leave through either. With none found, more than four, or a vtable whose slots are not
// V8's functions where v8::PageAllocator's declaration puts them, nothing is swapped and V8
// runs as it would (region_pool_stats() says so; isolate_test fails).
namespace pool {

using Permission = v8::PageAllocator::Permission;
constexpr std::size_t kRegion = std::size_t{256} << 10;  // V8's page size
constexpr std::size_t kMaxPooled = 8;                    // 2 MiB resident at most

using AllocateFn = void* (*)(v8::PageAllocator*, void*, std::size_t, std::size_t, Permission);
using FreeFn = bool (*)(v8::PageAllocator*, void*, std::size_t);
using ReleaseFn = bool (*)(v8::PageAllocator*, void*, std::size_t, std::size_t);
using ResizeFn = bool (*)(v8::PageAllocator*, void*, std::size_t, std::size_t, Permission);
using PermissionsFn = bool (*)(v8::PageAllocator*, void*, std::size_t, Permission);
using RangeFn = bool (*)(v8::PageAllocator*, void*, std::size_t);

// The vtable slot of a virtual member function (Itanium C++ ABI: a pointer to a virtual member
// is 1 + its byte offset in the vtable).
template <typename Member>
std::size_t slot_of(Member member) {
  struct {
    std::uintptr_t pointer;
    std::ptrdiff_t adjustment;
  } representation{};
  static_assert(sizeof(member) == sizeof(representation));
  std::memcpy(&representation, &member, sizeof representation);
  CODEMODE_CHECK((representation.pointer & 1) == 1, "the member is virtual");
  return (representation.pointer - 1) / sizeof(void*);
}

struct Slots {
  std::size_t allocate = slot_of(
      static_cast<void* (v8::PageAllocator::*)(void*, std::size_t, std::size_t, Permission)>(
          &v8::PageAllocator::AllocatePages));
  std::size_t free = slot_of(&v8::PageAllocator::FreePages);
  std::size_t release = slot_of(&v8::PageAllocator::ReleasePages);
  std::size_t resize = slot_of(&v8::PageAllocator::ResizeAllocationAt);
  std::size_t permissions = slot_of(&v8::PageAllocator::SetPermissions);
  std::size_t recommit = slot_of(&v8::PageAllocator::RecommitPages);
  std::size_t discard = slot_of(&v8::PageAllocator::DiscardSystemPages);
  std::size_t decommit = slot_of(&v8::PageAllocator::DecommitPages);
  std::size_t seal = slot_of(&v8::PageAllocator::SealPages);
  std::size_t count = slot_of(&v8::PageAllocator::CanAllocateSharedPages) + 1;
};

// The original functions, read from V8's vtable before the swap; the pool's state.
AllocateFn original_allocate = nullptr;
FreeFn original_free = nullptr;
ReleaseFn original_release = nullptr;
ResizeFn original_resize = nullptr;
PermissionsFn original_permissions = nullptr;
PermissionsFn original_recommit = nullptr;
RangeFn original_discard = nullptr;
RangeFn original_decommit = nullptr;
RangeFn original_seal = nullptr;

std::mutex mutex;
std::unordered_set<std::uintptr_t> live;  // regions the pool handed out or saw allocated
std::vector<void*> pooled;                // mapped read-write, zero
std::atomic<bool> installed{false};       // set once, by install(), before any isolate of ours
std::atomic<std::size_t> reused{0};       // regions handed out again
v8::PageAllocator* hooked = nullptr;      // one of the objects install() swapped the vtable of

bool poolable(std::size_t length, std::size_t alignment, Permission permissions) {
  return length == kRegion && alignment == kRegion && permissions == Permission::kReadWrite;
}

// Whatever changes a region's mapping takes it out of the pool's hands: it is freed as usual.
void forget(void* address, std::size_t length) {
  const auto begin = reinterpret_cast<std::uintptr_t>(address);
  std::lock_guard lock(mutex);
  for (auto it = live.begin(); it != live.end();) {
    if (*it < begin + length && begin < *it + kRegion) {
      it = live.erase(it);
    } else {
      ++it;
    }
  }
}

// Makes [address, address + kRegion) read as zero again: the resident pages (what the isolate
// touched) zeroed in place, so that the next isolate does not fault them in again; the others
// given back (a page swapped out is not resident and still holds its bytes).
void scrub(void* address) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t pages = kRegion / page;
  std::vector<unsigned char> resident(pages);
  auto* bytes = static_cast<unsigned char*>(address);
  if (::mincore(address, kRegion, resident.data()) != 0) {
    std::memset(address, 0, kRegion);
    return;
  }
  for (std::size_t i = 0; i < pages;) {
    const bool in_memory = (resident[i] & 1) != 0;
    std::size_t end = i + 1;
    while (end < pages && ((resident[end] & 1) != 0) == in_memory) ++end;
    // Given back when not in memory; zeroed when in memory, or when the kernel refuses that.
    if (!in_memory && ::madvise(bytes + i * page, (end - i) * page, MADV_DONTNEED) == 0) {
      i = end;
      continue;
    }
    std::memset(bytes + i * page, 0, (end - i) * page);
    i = end;
  }
}

void* allocate(v8::PageAllocator* self, void* hint, std::size_t length, std::size_t alignment,
               Permission permissions) {
  if (!poolable(length, alignment, permissions)) {
    return original_allocate(self, hint, length, alignment, permissions);
  }
  {
    std::lock_guard lock(mutex);
    if (!pooled.empty()) {
      void* region = pooled.back();
      pooled.pop_back();
      reused.fetch_add(1, std::memory_order_relaxed);
      live.insert(reinterpret_cast<std::uintptr_t>(region));
      return region;
    }
  }
  void* region = original_allocate(self, hint, length, alignment, permissions);
  if (region != nullptr) {
    std::lock_guard lock(mutex);
    live.insert(reinterpret_cast<std::uintptr_t>(region));
  }
  return region;
}

bool free_pages(v8::PageAllocator* self, void* address, std::size_t length) {
  if (length == kRegion) {
    std::unique_lock lock(mutex);
    if (live.erase(reinterpret_cast<std::uintptr_t>(address)) == 1 && pooled.size() < kMaxPooled) {
      lock.unlock();
      scrub(address);
      lock.lock();
      pooled.push_back(address);
      return true;
    }
  }
  return original_free(self, address, length);
}

bool release(v8::PageAllocator* self, void* address, std::size_t length, std::size_t new_length) {
  forget(address, length);
  return original_release(self, address, length, new_length);
}
bool resize(v8::PageAllocator* self, void* address, std::size_t old_length, std::size_t new_length,
            Permission permissions) {
  forget(address, std::max(old_length, new_length));
  return original_resize(self, address, old_length, new_length, permissions);
}
bool set_permissions(v8::PageAllocator* self, void* address, std::size_t length,
                     Permission permissions) {
  if (permissions != Permission::kReadWrite) forget(address, length);
  return original_permissions(self, address, length, permissions);
}
bool recommit(v8::PageAllocator* self, void* address, std::size_t length, Permission permissions) {
  if (permissions != Permission::kReadWrite) forget(address, length);
  return original_recommit(self, address, length, permissions);
}
bool discard(v8::PageAllocator* self, void* address, std::size_t length) {
  return original_discard(self, address, length);  // the pages stay mapped, and read as zero
}
bool decommit(v8::PageAllocator* self, void* address, std::size_t length) {
  forget(address, length);
  return original_decommit(self, address, length);
}
bool seal(v8::PageAllocator* self, void* address, std::size_t length) {
  forget(address, length);
  return original_seal(self, address, length);
}

}  // namespace pool

// V8's own, exported by node (v8::base::PageAllocator's vtable and member functions, by their
// mangled names): what the vtable's slots must hold before the swap. Only their addresses are
// taken.
extern "C" {
extern const char base_vtable[] __asm__("_ZTVN2v84base13PageAllocatorE");
void base_allocate_pages() __asm__(
    "_ZN2v84base13PageAllocator13AllocatePagesEPvmmNS_13PageAllocator10PermissionE");
void base_free_pages() __asm__("_ZN2v84base13PageAllocator9FreePagesEPvm");
void base_release_pages() __asm__("_ZN2v84base13PageAllocator12ReleasePagesEPvmm");
void base_set_permissions() __asm__(
    "_ZN2v84base13PageAllocator14SetPermissionsEPvmNS_13PageAllocator10PermissionE");
void base_recommit_pages() __asm__(
    "_ZN2v84base13PageAllocator13RecommitPagesEPvmNS_13PageAllocator10PermissionE");
void base_discard_system_pages() __asm__("_ZN2v84base13PageAllocator18DiscardSystemPagesEPvm");
void base_decommit_pages() __asm__("_ZN2v84base13PageAllocator13DecommitPagesEPvm");
void base_seal_pages() __asm__("_ZN2v84base13PageAllocator9SealPagesEPvm");
}

namespace pool {

// The words of node's writable data (its file's read-write segments and the .bss after them)
// that hold `value`.
std::vector<void**> find_in_node_data(const void* value) {
  std::vector<void**> found;
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return found;
  exe[n] = '\0';
  std::ifstream maps("/proc/self/maps");
  std::string line;
  std::uintptr_t previous_end = 0;
  bool previous_was_node = false;
  while (std::getline(maps, line)) {
    std::uintptr_t begin = 0;
    std::uintptr_t end = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &begin, &end, perms) != 3) continue;
    const std::size_t slash = line.find('/');
    const bool node =
        slash != std::string::npos && line.compare(slash, std::string::npos, exe) == 0;
    const bool bss = slash == std::string::npos && previous_was_node && begin == previous_end;
    if ((node || bss) && std::strcmp(perms, "rw-p") == 0) {
      // NOLINTNEXTLINE(performance-no-int-to-ptr): the addresses come from /proc/self/maps
      for (auto* word = reinterpret_cast<void**>(begin); word < reinterpret_cast<void**>(end);
           ++word) {
        if (*word == value) found.push_back(word);
      }
    }
    previous_end = end;
    previous_was_node = node;
  }
  return found;
}

// Swaps the pool in, or leaves V8 as it is (see the region pool above). Main thread, once, before
// any isolate of ours.
void install() {
  const Slots slots;
  const auto* vtable = reinterpret_cast<void* const*>(base_vtable);
  void* const* functions = vtable + 2;  // past the offset to top and the type info
  const std::pair<std::size_t, void (*)()> expected[] = {
      {slots.allocate, base_allocate_pages}, {slots.free, base_free_pages},
      {slots.release, base_release_pages},   {slots.permissions, base_set_permissions},
      {slots.recommit, base_recommit_pages}, {slots.discard, base_discard_system_pages},
      {slots.decommit, base_decommit_pages}, {slots.seal, base_seal_pages},
  };
  for (const auto& [slot, function] : expected) {
    if (functions[slot] != reinterpret_cast<void*>(function)) return;
  }
  const std::vector<void**> objects = find_in_node_data(functions);
  if (objects.empty() || objects.size() > 4) return;
  // The copy: the same words, with more after the last slot v8::PageAllocator declares, in case
  // V8's class has virtual functions of its own past them. It lives as long as the process.
  constexpr std::size_t kExtra = 16;
  auto* copy = new void*[2 + slots.count + kExtra];
  std::memcpy(copy, vtable, (2 + slots.count + kExtra) * sizeof(void*));
  void** mine = copy + 2;
  original_allocate = reinterpret_cast<AllocateFn>(functions[slots.allocate]);
  original_free = reinterpret_cast<FreeFn>(functions[slots.free]);
  original_release = reinterpret_cast<ReleaseFn>(functions[slots.release]);
  original_resize = reinterpret_cast<ResizeFn>(functions[slots.resize]);
  original_permissions = reinterpret_cast<PermissionsFn>(functions[slots.permissions]);
  original_recommit = reinterpret_cast<PermissionsFn>(functions[slots.recommit]);
  original_discard = reinterpret_cast<RangeFn>(functions[slots.discard]);
  original_decommit = reinterpret_cast<RangeFn>(functions[slots.decommit]);
  original_seal = reinterpret_cast<RangeFn>(functions[slots.seal]);
  mine[slots.allocate] = reinterpret_cast<void*>(&allocate);
  mine[slots.free] = reinterpret_cast<void*>(&free_pages);
  mine[slots.release] = reinterpret_cast<void*>(&release);
  mine[slots.resize] = reinterpret_cast<void*>(&resize);
  mine[slots.permissions] = reinterpret_cast<void*>(&set_permissions);
  mine[slots.recommit] = reinterpret_cast<void*>(&recommit);
  mine[slots.discard] = reinterpret_cast<void*>(&discard);
  mine[slots.decommit] = reinterpret_cast<void*>(&decommit);
  mine[slots.seal] = reinterpret_cast<void*>(&seal);
  // node's threads may be in the allocator now: either vtable is valid for the object.
  for (void** object : objects)
    __atomic_store_n(object, static_cast<void*>(mine), __ATOMIC_RELEASE);
  hooked = reinterpret_cast<v8::PageAllocator*>(objects.front());
  installed.store(true, std::memory_order_release);
}

}  // namespace pool

node::MultiIsolatePlatform* platform = nullptr;
std::mutex registry_mutex;
std::map<v8::Isolate*, std::shared_ptr<IsolateTasks>> registry;

std::shared_ptr<IsolateTasks> tasks_of(v8::Isolate* isolate) {
  std::lock_guard lock(registry_mutex);
  const auto it = registry.find(isolate);
  return it == registry.end() ? nullptr : it->second;
}

}  // namespace

void attach(v8::Local<v8::Context> node_context) {
  CODEMODE_CHECK(platform == nullptr, "the addon attaches to its node once");
  platform = node::GetMultiIsolatePlatform(node::GetCurrentEnvironment(node_context));
  CODEMODE_CHECK(platform != nullptr, "a node that loads an addon has a platform");
  pool::install();
}

v8::Isolate* allocate_isolate() {
  CODEMODE_CHECK(platform != nullptr, "attach() ran before the first isolate");
  v8::Isolate* isolate = v8::Isolate::Allocate();
  auto tasks = std::make_shared<IsolateTasks>();
  tasks->set_self(tasks);
  {
    std::lock_guard lock(registry_mutex);
    registry.emplace(isolate, tasks);
  }
  platform->RegisterIsolate(isolate, tasks.get());
  return isolate;
}

void dispose_isolate(v8::Isolate* isolate) {
  std::shared_ptr<IsolateTasks> tasks;
  {
    std::lock_guard lock(registry_mutex);
    const auto it = registry.find(isolate);
    CODEMODE_CHECK(it != registry.end(), "only isolates of allocate_isolate() are disposed here");
    tasks = std::move(it->second);
    registry.erase(it);
  }
  // Dispose, unregister, free: V8's background jobs may still ask for the isolate's task runner
  // until Dispose returns, so it stays registered until then.
  platform->DisposeIsolate(isolate);
  (void)tasks->take();  // the tasks go before the runner that holds them
}

void run_foreground_tasks(v8::Isolate* isolate) {
  const std::shared_ptr<IsolateTasks> tasks = tasks_of(isolate);
  if (!tasks) return;
  for (auto& task : tasks->take()) task->Run();
}

std::string_view v8_version() { return v8::V8::GetVersion(); }

RegionPoolStats region_pool_stats() {
  return RegionPoolStats{pool::installed.load(std::memory_order_acquire),
                         pool::reused.load(std::memory_order_relaxed)};
}

v8::PageAllocator* region_pool_allocator() {
  return pool::installed.load(std::memory_order_acquire) ? pool::hooked : nullptr;
}

}  // namespace codemode::isolate
