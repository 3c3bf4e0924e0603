#include "isolate/v8_platform.h"

#include <sys/random.h>

#include <libplatform/libplatform.h>
#include <v8.h>

#include <cerrno>
#include <memory>
#include <mutex>

#include "isolate/page_pool.h"

namespace codemode::isolate {

// --regexp-tier-up-ticks: a regular expression runs as bytecode 100 times, not once, before V8
// compiles it to machine code (one over a subject of 1,000 characters or more is compiled at
// once). A call's isolate is new, so every expression its code runs is compiled in it, and most
// run a few times: for the ~20 of one URL resolution the machine code cost more than the runs it
// sped up (an execute call with a URL, Headers and a Response: 10.80 -> 10.31 M instructions,
// before url.js kept its own compiled in the snapshot).
std::string_view v8_flags() {
  return "--no-expose-wasm --disallow-code-generation-from-strings --no-verify-snapshot-checksum "
         "--no-rehash-snapshot --regexp-tier-up-ticks=100";
}

namespace {

// V8 seeds each isolate's random numbers (Math.random, hash seeds) from here; without a source
// it opens /dev/urandom, which sandbox processes cannot, and falls back to the clock.
bool fill_with_entropy(unsigned char* buffer, std::size_t length) {
  while (length > 0) {
    const ssize_t got = ::getrandom(buffer, length, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    buffer += got;
    length -= static_cast<std::size_t>(got);
  }
  return true;
}

// V8's default platform with one change: its pages come from a RecyclingPageAllocator.
class PooledPlatform final : public v8::Platform {
 public:
  explicit PooledPlatform(std::unique_ptr<v8::Platform> inner)
      : inner_(std::move(inner)),
        pages_(inner_->GetPageAllocator(), kPagePoolAddressSpace, kMaxResidentBytes) {}

  v8::PageAllocator* GetPageAllocator() override { return &pages_; }
  v8::ZoneBackingAllocator* GetZoneBackingAllocator() override {
    return inner_->GetZoneBackingAllocator();
  }
  void OnCriticalMemoryPressure() override { inner_->OnCriticalMemoryPressure(); }
  bool OnCriticalMemoryPressure(size_t length) override {
    return inner_->OnCriticalMemoryPressure(length);
  }
  int NumberOfWorkerThreads() override { return inner_->NumberOfWorkerThreads(); }
  std::shared_ptr<v8::TaskRunner> GetForegroundTaskRunner(v8::Isolate* isolate) override {
    return inner_->GetForegroundTaskRunner(isolate);
  }
  void CallOnWorkerThread(std::unique_ptr<v8::Task> task) override {
    inner_->CallOnWorkerThread(std::move(task));
  }
  void CallBlockingTaskOnWorkerThread(std::unique_ptr<v8::Task> task) override {
    inner_->CallBlockingTaskOnWorkerThread(std::move(task));
  }
  void CallLowPriorityTaskOnWorkerThread(std::unique_ptr<v8::Task> task) override {
    inner_->CallLowPriorityTaskOnWorkerThread(std::move(task));
  }
  void CallDelayedOnWorkerThread(std::unique_ptr<v8::Task> task, double delay) override {
    inner_->CallDelayedOnWorkerThread(std::move(task), delay);
  }
  bool IdleTasksEnabled(v8::Isolate* isolate) override { return inner_->IdleTasksEnabled(isolate); }
  std::unique_ptr<v8::JobHandle> PostJob(v8::TaskPriority priority,
                                         std::unique_ptr<v8::JobTask> job) override {
    return inner_->PostJob(priority, std::move(job));
  }
  double MonotonicallyIncreasingTime() override { return inner_->MonotonicallyIncreasingTime(); }
  double CurrentClockTimeMillis() override { return inner_->CurrentClockTimeMillis(); }
  StackTracePrinter GetStackTracePrinter() override { return inner_->GetStackTracePrinter(); }
  v8::TracingController* GetTracingController() override { return inner_->GetTracingController(); }
  void DumpWithoutCrashing() override { inner_->DumpWithoutCrashing(); }
  v8::HighAllocationThroughputObserver* GetHighAllocationThroughputObserver() override {
    return inner_->GetHighAllocationThroughputObserver();
  }

  PagePoolStats page_pool_stats() const { return pages_.stats(); }
  RecyclingPageAllocator::Audit audit_page_pool() { return pages_.audit(); }

 private:
  // Resident: what a few short calls' isolates leave (about 0.6 MiB each); a heavy call's
  // excess goes back to the system.
  static constexpr std::size_t kMaxResidentBytes = std::size_t{8} << 20;
  std::unique_ptr<v8::Platform> inner_;
  RecyclingPageAllocator pages_;
};

std::once_flag initialized;
std::unique_ptr<PooledPlatform> platform;
bool shut_down = false;
channel::JitMode jit_mode = channel::JitMode::enabled;
}  // namespace

void ensure_v8_initialized(channel::JitMode mode) {
  std::call_once(initialized, [mode] {
    // ICU comes from the system library (libicu72); no data file is needed.
    v8::V8::InitializeICUDefaultLocation("/proc/self/exe");
    v8::V8::SetEntropySource(fill_with_entropy);
    const std::string_view flags = v8_flags();
    v8::V8::SetFlagsFromString(flags.data(), flags.size());
    if (mode == channel::JitMode::jitless) {
      constexpr std::string_view kJitless = "--jitless";
      v8::V8::SetFlagsFromString(kJitless.data(), kJitless.size());
    }
    jit_mode = mode;
    platform = std::make_unique<PooledPlatform>(v8::platform::NewDefaultPlatform());
    v8::V8::InitializePlatform(platform.get());
    v8::V8::Initialize();
  });
}

PagePoolStats page_pool_stats() { return platform ? platform->page_pool_stats() : PagePoolStats{}; }

RecyclingPageAllocator::Audit audit_page_pool() {
  return platform ? platform->audit_page_pool() : RecyclingPageAllocator::Audit{};
}

channel::JitMode v8_jit_mode() { return jit_mode; }

std::string_view v8_version() { return v8::V8::GetVersion(); }

void shutdown_v8() {
  if (!platform || shut_down) return;
  shut_down = true;
  v8::V8::Dispose();
  v8::V8::DisposePlatform();
  platform.reset();
}

}  // namespace codemode::isolate
