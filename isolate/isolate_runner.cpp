#include "isolate/isolate_runner.h"

#include <pthread.h>
#include <time.h>

#include <v8.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "isolate/globals_snapshot.h"
#include "isolate/host_functions.h"
#include "isolate/interrupts.h"
#include "isolate/spec_view.h"
#include "isolate/v8_platform.h"
#include "isolate/v8_text.h"
#include "isolate/watchdog.h"

namespace codemode::isolate {

namespace {

using detail::CallState;
using detail::Clock;
using detail::compile;
using detail::describe_exception;
using detail::external_references;
using detail::GlobalsSnapshot;
using detail::Interrupts;
using detail::kMB;
using detail::one_line;
using detail::Stop;
using detail::Timer;
using detail::utf8;
using detail::v8_string;
using detail::Watchdog;

// How far past heap_mb the near-heap-limit callback lets the heap grow while a termination is on
// its way. V8 cannot fail an allocation: a limit it cannot allocate under aborts the process, and
// one uninterruptible builtin (String.prototype.split, JSON.stringify of a huge string) may need
// up to 1 GiB in one object on top of what is live. Past this, V8 aborts, as it would anyway.
constexpr std::size_t kMaxHeapOvershoot = 3072 * kMB;

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

// What the near-heap-limit callback needs: the call's interrupts, and its ArrayBuffer budget.
struct HeapWatch {
  Interrupts* interrupts;
  BudgetAllocator* allocator;
};

std::string stop_message(Stop reason, const config::Limits& limits) {
  switch (reason) {
    case Stop::cpu:
      return "cpu limit " + std::to_string(limits.cpu_ms) + " ms exceeded";
    case Stop::wall:
      return "wall limit " + std::to_string(limits.wall_ms) + " ms exceeded";
    case Stop::heap:
      return "heap limit " + std::to_string(limits.heap_mb) + " MB exceeded";
    case Stop::cancelled:
      return "cancelled";
    case Stop::none:
      break;
  }
  return "stopped";
}

channel::ErrorKind stop_kind(Stop reason) {
  switch (reason) {
    case Stop::cpu:
    case Stop::wall:
      return channel::ErrorKind::timeout;
    case Stop::heap:
      return channel::ErrorKind::memory;
    default:
      return channel::ErrorKind::runtime;
  }
}

// Compiles the code as exactly one expression, or returns the SyntaxError text.
//
// Why two wrappers: a single wrapper like `(\n<code>\n)` is escapable, because the code may
// close the wrapper's bracket itself and smuggle statements in between
// (`1); evil(); (2`). So the code must parse in two wrappers whose innermost open bracket
// differs: `(\n<code>\n)` and `({[\n<code>\n]: 0})`. Both parses see the same token stream for
// the code (after `(` and after `[` the lexer is in the same state: a `/` starts a regex), so
// a bracket in the code that closes the wrapper's `(` would have to close the other's `[`
// too, which no grammar allows: one of the two parses fails. Hence when both succeed the
// code is balanced and spans the whole inside of each wrapper. The computed property key
// `[ AssignmentExpression ]` also refuses a top-level comma, so `f, evil()` fails there.
// The newlines keep a trailing `//` comment from eating the closing bracket; an unterminated
// `/*`, string or template swallows the closing bracket and so fails to parse.
// Compiling does not run anything; the first wrapper's script is then run to get the value.
std::variant<v8::Local<v8::Script>, std::string> compile_one_expression(
    v8::Local<v8::Context> context, std::string_view code) {
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  std::string check = "({[\n";
  check += code;
  check += "\n]: 0})";
  std::string wrapped = "(\n";
  wrapped += code;
  wrapped += "\n)";
  for (const std::string* source : {&check, &wrapped}) {
    v8::TryCatch try_catch(isolate);
    v8::Local<v8::Script> script;
    if (compile(context, *source, "code.js", -1).ToLocal(&script)) {
      if (source == &wrapped) return script;
      continue;
    }
    if (try_catch.HasTerminated()) return std::string("terminated");
    std::string text = try_catch.HasCaught() ? describe_exception(isolate, try_catch.Exception())
                                             : std::string("SyntaxError: the code does not parse");
    return text;
  }
  return std::string("unreachable");
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

// One call, inside an isolate that the caller creates and disposes.
class Run {
 public:
  Run(v8::Isolate* isolate, const PrepareRequest& request, Interrupts& interrupts,
      const BudgetAllocator& allocator)
      : isolate_(isolate),
        request_(request),
        limits_(request_.limits),
        interrupts_(interrupts),
        allocator_(allocator) {}

  // The context and the sandbox's globals, before any code is known. False: set-up failed and
  // run() reports why.
  bool prepare() {
    v8::HandleScope handles(isolate_);
    state_.clone_budget = std::size_t{limits_.heap_mb} * kMB;
    isolate_->SetData(0, &state_);
    const FetchGlobal fetch =
        request_.tool == channel::Tool::execute ? request_.fetch : FetchGlobal::absent;
    v8::Local<v8::Context> context;
    v8::Local<v8::Function> serialize;
    if (!v8::Context::FromSnapshot(isolate_, GlobalsSnapshot::context_index(fetch))
             .ToLocal(&context) ||
        !context->GetDataFromSnapshotOnce<v8::Function>(0).ToLocal(&serialize)) {
      setup_failure_ = channel::Outcome::failure(
          channel::ErrorKind::runtime, "sandbox set-up failed: the context did not deserialise");
      return false;
    }
    v8::Context::Scope context_scope(context);
    context_.Reset(isolate_, context);
    serialize_.Reset(isolate_, serialize);
    channel::Outcome failure;
    if (!set_up(context, failure)) {
      setup_failure_ = std::move(failure);
      return false;
    }
    rehearse(context, serialize);
    return true;
  }

  channel::Outcome run(std::string_view code, const channel::Fetcher* fetcher) {
    v8::HandleScope handles(isolate_);
    v8::Local<v8::Context> context = context_.Get(isolate_);
    v8::Context::Scope context_scope(context);
    wall_deadline_ = Clock::now() + std::chrono::milliseconds(limits_.wall_ms);
    state_.fetcher = fetcher;
    channel::Outcome outcome = setup_failure_ ? std::move(*setup_failure_) : run_in(context, code);
    outcome.logs = state_.logs.take();
    interrupts_.mailbox()->close();  // fetches still in flight complete into nothing
    state_.timers.clear();           // the Globals must go while the isolate lives
    state_.fetches.clear();
    state_.policy_errors.clear();
    spec_view_.reset();
    serialize_.Reset();
    context_.Reset();
    isolate_->SetData(0, nullptr);
    return outcome;
  }

 private:
  // A failure caused by a failed JS step: a tripped limit wins over what the step threw.
  channel::Outcome failed(const v8::TryCatch& try_catch) {
    if (interrupts_.reason() != Stop::none) return stopped();
    if (try_catch.HasCaught()) return thrown(try_catch.Exception());
    return channel::Outcome::failure(channel::ErrorKind::runtime,
                                     "the code stopped without an exception");
  }
  channel::Outcome stopped() {
    const Stop reason = interrupts_.reason();
    return channel::Outcome::failure(stop_kind(reason), stop_message(reason, limits_));
  }
  channel::Outcome thrown(v8::Local<v8::Value> exception) {
    for (const auto& refusal : state_.policy_errors) {
      if (refusal.error.Get(isolate_)->StrictEquals(exception)) {
        return channel::Outcome::failure(channel::ErrorKind::policy, one_line(refusal.message));
      }
    }
    std::string text = describe_exception(isolate_, exception);
    if (allocator_.refused() && text.starts_with("RangeError: Array buffer allocation failed")) {
      return channel::Outcome::failure(
          channel::ErrorKind::memory,
          "ArrayBuffer limit " + std::to_string(limits_.heap_mb) + " MB exceeded");
    }
    return channel::Outcome::failure(channel::ErrorKind::runtime, std::move(text));
  }

  // What a context from the snapshot needs before its call: what deserialisation does not
  // keep (code generation from strings is a per-context switch; V8 installs SharedArrayBuffer
  // and Atomics again), and what is this call's own.
  bool set_up(v8::Local<v8::Context> context, channel::Outcome& outcome) {
    context->AllowCodeGenerationFromStrings(false);
    v8::Local<v8::Object> global = context->Global();
    v8::TryCatch try_catch(isolate_);
    for (const char* name : {"WebAssembly", "SharedArrayBuffer", "Atomics"}) {
      if (global->Delete(context, v8_string(isolate_, name)).IsNothing()) {
        outcome = setup_failed(try_catch);
        return false;
      }
    }
    if (request_.tool == channel::Tool::execute && request_.fetch == FetchGlobal::present) {
      state_.mailbox = interrupts_.mailbox();
    }
    if (request_.tool == channel::Tool::search && request_.api != nullptr) {
      v8::Local<v8::Value> spec;
      if (!spec_view_.emplace(isolate_, *request_.api).root(context).ToLocal(&spec) ||
          global->Set(context, v8_string(isolate_, "spec"), spec).IsNothing()) {
        outcome = setup_failed(try_catch);
        return false;
      }
    }
    if (request_.extend_context != nullptr) request_.extend_context(isolate_, context);
    return true;
  }

  // A call's path run once with constant code, before the call is known. The first compile,
  // run, microtask checkpoint and serialisation in an isolate pay for work that later ones do
  // not (the compiler's and the microtask queue's first use, code and data not yet in the CPU's
  // caches): rehearsed here, the call's own run() takes less than half the time, for ~1.5%
  // more instructions per isolate (bench/README.md). What it leaves is garbage (a function, a
  // settled promise, a string) and a compiled script of ours; a failure only loses the gain.
  void rehearse(v8::Local<v8::Context> context, v8::Local<v8::Function> serialize) {
    v8::TryCatch ignored(isolate_);
    auto compiled = compile_one_expression(context, "async () => 0");
    auto* script = std::get_if<v8::Local<v8::Script>>(&compiled);
    v8::Local<v8::Value> function;
    v8::Local<v8::Value> promise;
    if (script == nullptr || !(*script)->Run(context).ToLocal(&function) ||
        !function->IsFunction() ||
        !function.As<v8::Function>()
             ->Call(context, v8::Undefined(isolate_), 0, nullptr)
             .ToLocal(&promise)) {
      return;
    }
    isolate_->PerformMicrotaskCheckpoint();
    v8::Local<v8::Value> zero = v8::Integer::New(isolate_, 0);
    v8::Local<v8::Value> json;
    if (!serialize->Call(context, v8::Undefined(isolate_), 1, &zero).ToLocal(&json)) return;
  }

  channel::Outcome setup_failed(const v8::TryCatch& try_catch) {
    if (interrupts_.reason() != Stop::none) return stopped();
    // Only the host's own scripts ran: a failure here is a broken build, not the code's fault.
    std::string what = try_catch.HasCaught() ? describe_exception(isolate_, try_catch.Exception())
                                             : std::string("no exception");
    return channel::Outcome::failure(channel::ErrorKind::runtime, "sandbox set-up failed: " + what);
  }

  channel::Outcome run_in(v8::Local<v8::Context> context, std::string_view code) {
    auto compiled = compile_one_expression(context, code);
    if (auto* error = std::get_if<std::string>(&compiled)) {
      if (interrupts_.reason() != Stop::none) return stopped();
      return channel::Outcome::failure(channel::ErrorKind::compile, std::move(*error));
    }
    v8::Local<v8::Script> script = std::get<v8::Local<v8::Script>>(compiled);

    // The code's own CPU time starts here: set-up (and the spec parse) is the host's cost.
    clockid_t cpu_clock{};
    pthread_getcpuclockid(pthread_self(), &cpu_clock);
    Watchdog watchdog(interrupts_, cpu_clock, std::chrono::milliseconds(limits_.cpu_ms),
                      wall_deadline_);
    if (!watchdog.usable()) {
      return channel::Outcome::failure(
          channel::ErrorKind::runtime,
          "the sandbox could not set its CPU and wall timers; nothing ran");
    }

    v8::TryCatch try_catch(isolate_);
    v8::Local<v8::Value> function;
    if (!script->Run(context).ToLocal(&function)) return failed(try_catch);
    if (!function->IsFunction()) {
      return channel::Outcome::failure(
          channel::ErrorKind::compile,
          "the code must be a function expression such as async () => …; it "
          "evaluated to " +
              utf8(isolate_, function->TypeOf(isolate_)));
    }
    v8::Local<v8::Value> result;
    if (!function.As<v8::Function>()
             ->Call(context, v8::Undefined(isolate_), 0, nullptr)
             .ToLocal(&result)) {
      return failed(try_catch);
    }
    if (result->IsPromise()) {
      v8::Local<v8::Promise> promise = result.As<v8::Promise>();
      if (auto failure = drive(context, promise)) return std::move(*failure);
      if (promise->State() == v8::Promise::kRejected) return thrown(promise->Result());
      result = promise->Result();
    }
    v8::Local<v8::Value> json;
    if (!serialize_.Get(isolate_)
             ->Call(context, v8::Undefined(isolate_), 1, &result)
             .ToLocal(&json)) {
      if (interrupts_.reason() != Stop::none || !try_catch.HasCaught()) return failed(try_catch);
      return channel::Outcome::failure(channel::ErrorKind::runtime,
                                       "result is not JSON-serialisable: " +
                                           describe_exception(isolate_, try_catch.Exception()));
    }
    if (interrupts_.reason() != Stop::none) return stopped();
    return channel::Outcome::success(utf8(isolate_, json));
  }

  // Settles the promises of the fetches that have completed. True when any did.
  bool deliver_fetches(v8::Local<v8::Context> context) {
    auto arrived = interrupts_.take_arrived();
    for (auto& [id, result] : arrived) {
      auto pending = state_.fetches.find(id);
      if (pending == state_.fetches.end()) continue;
      v8::HandleScope handles(isolate_);
      v8::Local<v8::Promise::Resolver> resolver = pending->second.Get(isolate_);
      state_.fetches.erase(pending);
      if (auto* error = std::get_if<gateway::GatewayError>(&result)) {
        v8::Local<v8::Value> exception =
            v8::Exception::TypeError(v8_string(isolate_, error->message));
        if (error->kind == gateway::ErrorKind::policy) {
          state_.policy_errors.push_back(
              CallState::Refusal{v8::Global<v8::Value>(isolate_, exception), error->message});
        }
        if (resolver->Reject(context, exception).IsNothing()) return true;
        continue;
      }
      auto& response = std::get<gateway::InboundResponse>(result);
      v8::Local<v8::Object> raw;
      if (!response_object(context, id, response).ToLocal(&raw) ||
          resolver->Resolve(context, raw).IsNothing()) {
        return true;  // terminating: the loop's next check reports why
      }
      state_.bodies.emplace(id, std::move(response.body));
    }
    return !arrived.empty();
  }

  v8::MaybeLocal<v8::Object> response_object(v8::Local<v8::Context> context, std::uint32_t id,
                                             const gateway::InboundResponse& response) {
    v8::Local<v8::Array> headers =
        v8::Array::New(isolate_, static_cast<int>(response.headers.size()));
    for (std::uint32_t i = 0; i < response.headers.size(); ++i) {
      v8::Local<v8::Value> pair[] = {v8_string(isolate_, response.headers[i].first),
                                     v8_string(isolate_, response.headers[i].second)};
      if (headers->Set(context, i, v8::Array::New(isolate_, pair, 2)).IsNothing()) return {};
    }
    v8::Local<v8::Object> raw = v8::Object::New(isolate_);
    const std::pair<const char*, v8::Local<v8::Value>> fields[] = {
        {"status", v8::Integer::NewFromUnsigned(isolate_, response.status)},
        {"statusText", v8_string(isolate_, response.status_text)},
        {"headers", headers},
        {"url", v8_string(isolate_, response.final_url)},
        {"redirected", v8::Boolean::New(isolate_, response.redirects > 0)},
        {"bodyId", v8::Integer::NewFromUnsigned(isolate_, id)},
        {"bodyLength", v8::Number::New(isolate_, static_cast<double>(response.body.size()))},
    };
    for (const auto& [name, value] : fields) {
      if (raw->Set(context, v8_string(isolate_, name), value).IsNothing()) return {};
    }
    return raw;
  }

  // The event loop: microtasks, then the earliest due timer, until the promise settles.
  // nullopt: the promise settled.
  std::optional<channel::Outcome> drive(v8::Local<v8::Context> context,
                                        v8::Local<v8::Promise> promise) {
    for (;;) {
      isolate_->PerformMicrotaskCheckpoint();
      if (interrupts_.reason() != Stop::none) return stopped();
      if (promise->State() != v8::Promise::kPending) return std::nullopt;
      if (deliver_fetches(context)) continue;
      if (state_.timers.empty() && state_.fetches.empty()) {
        return channel::Outcome::failure(
            channel::ErrorKind::runtime,
            "the promise never settled (nothing left that could settle it)");
      }
      auto first = state_.timers.begin();
      const Clock::time_point due =
          state_.timers.empty() ? Clock::time_point::max() : first->first.first;
      if (due > Clock::now()) {
        // While the code waits, the thread runs what V8 has posted for the isolate (finalisers,
        // GC steps): no event loop of node's ever will.
        run_foreground_tasks(isolate_);
        // Time a fetch spends waiting for a person's yes does not count (Mailbox::hold).
        const Clock::time_point wall = interrupts_.mailbox()->deadline(wall_deadline_);
        interrupts_.wait_until(std::min(due, wall));
        if (Clock::now() >= interrupts_.mailbox()->deadline(wall_deadline_)) {
          interrupts_.trip(Stop::wall);
        }
        if (interrupts_.reason() != Stop::none) return stopped();
        continue;
      }
      Timer timer = std::move(first->second);
      state_.timers.erase(first);
      v8::HandleScope handles(isolate_);
      v8::Local<v8::Array> args = timer.args.Get(isolate_);
      std::vector<v8::Local<v8::Value>> argv;
      for (std::uint32_t i = 0; i < args->Length(); ++i) {
        argv.push_back(
            args->Get(context, i).FromMaybe(v8::Local<v8::Value>(v8::Undefined(isolate_))));
      }
      v8::TryCatch try_catch(isolate_);
      v8::Local<v8::Value> ignored;
      if (!timer.callback.Get(isolate_)
               ->Call(context, v8::Undefined(isolate_), static_cast<int>(argv.size()), argv.data())
               .ToLocal(&ignored)) {
        // An exception nobody can catch: the call fails with it, as an uncaught one would.
        return failed(try_catch);
      }
    }
  }

  v8::Isolate* isolate_;
  const PrepareRequest request_;
  const config::Limits limits_;
  Interrupts& interrupts_;
  const BudgetAllocator& allocator_;
  Clock::time_point wall_deadline_;  // set when the code starts
  CallState state_;
  std::optional<SpecView> spec_view_;  // search only; destroyed before the isolate
  v8::Global<v8::Context> context_;
  v8::Global<v8::Function> serialize_;
  std::optional<channel::Outcome> setup_failure_;
};

}  // namespace

namespace {
std::atomic<v8::OOMErrorCallback> out_of_memory_handler{nullptr};
}  // namespace

void set_out_of_memory_handler(v8::OOMErrorCallback handler) { out_of_memory_handler = handler; }

struct PreparedIsolate::Parts {
  explicit Parts(const PrepareRequest& request)
      : allocator(std::size_t{request.limits.heap_mb} * kMB) {}
  BudgetAllocator allocator;
  v8::Isolate* isolate = nullptr;
  std::optional<Interrupts> interrupts;
  HeapWatch heap_watch{};
  std::optional<Run> run;
};

PreparedIsolate::PreparedIsolate(const PrepareRequest& request)
    : request_(request), parts_(std::make_unique<Parts>(request)) {
  const std::size_t heap_bytes = std::size_t{request.limits.heap_mb} * kMB;
  v8::Isolate::CreateParams params;
  params.constraints.ConfigureDefaultsFromHeapSize(0, heap_bytes);
  params.constraints.set_code_range_size_in_bytes(kCodeRangeBytes);
  params.array_buffer_allocator = &parts_->allocator;
  params.snapshot_blob = GlobalsSnapshot::get().blob();
  params.external_references = external_references();
  params.oom_error_callback = out_of_memory_handler.load();
  // Given its context in the background, which is where a prepared isolate is until its call
  // comes; run() brings it to the foreground, so the call itself gets V8's usual heuristics.
  // (Before Initialize, where V8 10.2 took it as a flag and saved work on the deserialisation
  // too, V8 14 reaches for a heap that does not exist yet.)
  v8::Isolate* isolate = parts_->isolate = allocate_isolate();
  v8::Isolate::Initialize(isolate, params);
  isolate->IsolateInBackgroundNotification();
  v8::Isolate::Scope isolate_scope(isolate);
  isolate->SetMicrotasksPolicy(v8::MicrotasksPolicy::kExplicit);
  isolate->SetAllowAtomicsWait(false);
  isolate->SetAllowWasmCodeGenerationCallback(
      [](v8::Local<v8::Context>, v8::Local<v8::String>) { return false; });
  Interrupts& interrupts = parts_->interrupts.emplace(isolate);
  parts_->heap_watch = HeapWatch{&interrupts, &parts_->allocator};
  isolate->AddNearHeapLimitCallback(near_heap_limit, &parts_->heap_watch);
  parts_->run.emplace(isolate, request_, interrupts, parts_->allocator).prepare();
}

PreparedIsolate::~PreparedIsolate() {
  v8::Isolate* isolate = parts_->isolate;
  {
    v8::Isolate::Scope isolate_scope(isolate);
    parts_->run.reset();  // its Globals go while the isolate lives
    isolate->RemoveNearHeapLimitCallback(near_heap_limit, 0);
    parts_->interrupts.reset();
  }
  dispose_isolate(isolate);
}

bool PreparedIsolate::suits(channel::Tool tool, const config::Limits& limits) const {
  const config::Limits& mine = request_.limits;
  return tool == request_.tool && limits.heap_mb == mine.heap_mb && limits.cpu_ms == mine.cpu_ms &&
         limits.wall_ms == mine.wall_ms;
}

channel::Outcome PreparedIsolate::run(std::string_view code, channel::CancelToken* cancel,
                                      const channel::Fetcher* fetcher, channel::Waiter* waiter) {
  if (used_)
    return channel::Outcome::failure(channel::ErrorKind::runtime,
                                     "a prepared isolate runs one call");
  used_ = true;
  if (cancel != nullptr && cancel->cancelled()) {
    return channel::Outcome::failure(channel::ErrorKind::runtime, "cancelled");
  }
  v8::Isolate::Scope isolate_scope(parts_->isolate);
  parts_->isolate->IsolateInForegroundNotification();
  Interrupts& interrupts = *parts_->interrupts;
  interrupts.use_waiter(waiter);  // before anything can trip
  channel::CancelRegistration registration(cancel,
                                           [&interrupts] { interrupts.trip(Stop::cancelled); });
  channel::Outcome outcome = parts_->run->run(code, fetcher);
  interrupts.use_waiter(nullptr);  // the watchdog is disarmed; a late cancel wakes nobody
  return outcome;
}

channel::Outcome run_in_fresh_isolate(const RunRequest& request) {
  if (request.cancel != nullptr && request.cancel->cancelled()) {
    return channel::Outcome::failure(channel::ErrorKind::runtime, "cancelled");
  }
  PrepareRequest prepare{request.tool, *request.limits, request.api,
                         request.fetcher != nullptr ? FetchGlobal::present : FetchGlobal::absent,
                         request.extend_context};
  PreparedIsolate isolate(prepare);
  return isolate.run(request.code, request.cancel, request.fetcher);
}

}  // namespace codemode::isolate
