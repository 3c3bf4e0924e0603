#include "isolate/v8_platform.h"

#include <node.h>
#include <v8.h>

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

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

}  // namespace codemode::isolate
