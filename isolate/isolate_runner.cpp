#include "isolate/isolate_runner.h"

#include <pthread.h>
#include <time.h>

#include <v8.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "isolate/code_text.h"
#include "isolate/compile_code.h"
#include "isolate/globals_snapshot.h"
#include "isolate/heap_guard.h"
#include "isolate/host_functions.h"
#include "isolate/interrupts.h"
#include "isolate/spec_view.h"
#include "isolate/v8_platform.h"
#include "isolate/v8_text.h"
#include "isolate/watchdog.h"

namespace codemode::embedded {
std::string_view sandbox_describe_js();
}  // namespace codemode::embedded

namespace codemode::isolate {

namespace {

using detail::add_hint;
using detail::BudgetAllocator;
using detail::CallState;
using detail::Clock;
using detail::CodeMap;
using detail::compile;
using detail::compile_code;
using detail::compile_one_expression;
using detail::CompiledCode;
using detail::CompileStopped;
using detail::describe_exception;
using detail::external_references;
using detail::GlobalsSnapshot;
using detail::HeapWatch;
using detail::Interrupts;
using detail::kMB;
using detail::one_line;
using detail::set_heap_constraints;
using detail::Stop;
using detail::Timer;
using detail::unwatch_heap;
using detail::utf8;
using detail::utf8_prefix;
using detail::Utf8Prefix;
using detail::v8_string;
using detail::watch_heap;
using detail::Watchdog;

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
    channel::Outcome outcome = channel::Outcome::failure(channel::ErrorKind::runtime, text);
    outcome.error_detail = where_thrown(isolate_->GetCurrentContext(), exception);
    add_hint(outcome, runtime_hint(text));
    return outcome;
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
      v8::Local<v8::Map> refs;
      if (!spec_refs(context).ToLocal(&refs)) {
        outcome = setup_failed(try_catch);
        return false;
      }
      if (!spec_view_.emplace(isolate_, *request_.api, refs).root(context).ToLocal(&spec) ||
          global->Set(context, v8_string(isolate_, "spec"), spec).IsNothing() ||
          !install_describe(context, spec, refs)) {
        outcome = setup_failed(try_catch);
        return false;
      }
    }
    if (request_.extend_context != nullptr) request_.extend_context(isolate_, context);
    return true;
  }

  // spec.describe(operation) (js/describe.js): non-enumerable, so the document's own keys,
  // Object.keys(spec) and JSON.stringify(spec) stay as they were. A lazy property whose first
  // read makes a native function that compiles js/describe.js when called: in the globals
  // snapshot its code would cost every isolate of both tools (globals_snapshot.h), and even
  // making a function per search isolate cost a visible share of a hello call.
  bool install_describe(v8::Local<v8::Context> context, v8::Local<v8::Value> spec,
                        v8::Local<v8::Map> refs) {
    return spec->IsObject() && spec.As<v8::Object>()
                                   ->SetLazyDataProperty(context, v8_string(isolate_, "describe"),
                                                         describe_getter, refs, v8::DontEnum)
                                   .FromMaybe(false);
  }
  static void describe_getter(v8::Local<v8::Name>,
                              const v8::PropertyCallbackInfo<v8::Value>& info) {
    v8::Local<v8::Function> describe;
    if (v8::Function::New(info.GetIsolate()->GetCurrentContext(), describe_callback, info.Data(), 1,
                          v8::ConstructorBehavior::kThrow)
            .ToLocal(&describe)) {
      info.GetReturnValue().Set(describe);
    }
  }
  static void describe_callback(const v8::FunctionCallbackInfo<v8::Value>& info) {
    v8::Isolate* isolate = info.GetIsolate();
    v8::Local<v8::Context> context = isolate->GetCurrentContext();
    v8::Local<v8::Script> script;
    v8::Local<v8::Value> factory;
    v8::Local<v8::Value> refs = info.Data();
    v8::Local<v8::Value> describe;
    if (!compile(context, embedded::sandbox_describe_js(), "describe.js", 0).ToLocal(&script) ||
        !script->Run(context).ToLocal(&factory) || !factory->IsFunction() ||
        !factory.As<v8::Function>()
             ->Call(context, v8::Undefined(isolate), 1, &refs)
             .ToLocal(&describe) ||
        !describe->IsFunction()) {
      return;  // the exception (or termination) is pending
    }
    std::vector<v8::Local<v8::Value>> arguments;
    arguments.reserve(static_cast<std::size_t>(info.Length()));
    for (int i = 0; i < info.Length(); ++i) arguments.push_back(info[i]);
    v8::Local<v8::Value> result;
    if (describe.As<v8::Function>()
            ->Call(context, info.This(), static_cast<int>(arguments.size()), arguments.data())
            .ToLocal(&result)) {
      info.GetReturnValue().Set(result);
    }
  }

  // The map of $ref targets the spec view fills (js/bootstrap.js's specRefs), or empty.
  v8::MaybeLocal<v8::Map> spec_refs(v8::Local<v8::Context> context) {
    v8::Local<v8::Value> refs;
    if (!serialize_.Get(isolate_)->Get(context, v8_string(isolate_, "specRefs")).ToLocal(&refs) ||
        !refs->IsMap()) {
      return {};
    }
    return refs.As<v8::Map>();
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
    v8::Local<v8::Value> arguments[] = {v8::Integer::New(isolate_, 0),
                                        v8::Number::New(isolate_, 12000), v8::Undefined(isolate_)};
    v8::Local<v8::Value> json;
    if (!serialize->Call(context, v8::Undefined(isolate_), 3, arguments).ToLocal(&json)) return;
  }

  channel::Outcome setup_failed(const v8::TryCatch& try_catch) {
    if (interrupts_.reason() != Stop::none) return stopped();
    // Only the host's own scripts ran: a failure here is a broken build, not the code's fault.
    std::string what = try_catch.HasCaught() ? describe_exception(isolate_, try_catch.Exception())
                                             : std::string("no exception");
    return channel::Outcome::failure(channel::ErrorKind::runtime, "sandbox set-up failed: " + what);
  }

  // What to do about the usual mistakes a runtime error comes from.
  std::string runtime_hint(std::string_view message) const {
    const bool search = request_.tool == channel::Tool::search;
    if (search && message.starts_with("ReferenceError: fetch is not defined")) {
      return "search has no fetch: it reads the API description (spec); call the API with the "
             "execute tool";
    }
    if (!search && message.starts_with("ReferenceError: spec is not defined")) {
      return "execute has no spec: read the API description with the search tool";
    }
    if (message.starts_with("ReferenceError: require is not defined") ||
        message.find("import(") != std::string_view::npos ||
        message.find("dynamic import") != std::string_view::npos) {
      return "modules are not available: no import or require; use the globals the tool's "
             "description lists";
    }
    if (message.starts_with("SyntaxError: Unexpected token") &&
        message.find("JSON") != std::string_view::npos) {
      return "the response is not JSON: check response.status and its content-type (the "
             "requests below) before response.json(), or read response.text()";
    }
    return {};
  }
  // Where in the code as sent an exception was thrown: the first frame of its stack in the
  // code's own script ("code.js:LINE:COLUMN"), quoted. Read only from a native error's stack,
  // which V8 formats itself unless the code replaced Error.prepareStackTrace.
  std::string where_thrown(v8::Local<v8::Context> context, v8::Local<v8::Value> exception) {
    if (!exception->IsNativeError()) return {};
    v8::Local<v8::Value> stack;
    v8::TryCatch ignored(isolate_);
    if (!exception.As<v8::Object>()->Get(context, v8_string(isolate_, "stack")).ToLocal(&stack) ||
        !stack->IsString()) {
      return {};
    }
    const Utf8Prefix text = utf8_prefix(isolate_, stack.As<v8::String>(), 16384);
    constexpr std::string_view kScript = "code.js:";
    const std::size_t at = text.text.find(kScript);
    if (at == std::string::npos) return {};
    int line = 0;
    int column = 0;
    if (std::sscanf(text.text.c_str() + at + kScript.size(), "%d:%d", &line, &column) != 2 ||
        line <= 0 || column <= 0) {
      return {};
    }
    auto [code_line, code_column] = map_.to_code(line, column - 1);
    if (code_line <= 0) return {};
    return quote_line(code_, static_cast<std::size_t>(code_line),
                      static_cast<std::size_t>(std::max(code_column, 0)));
  }

  // The code's value: the function it evaluates to called (and awaited), or the value itself.
  channel::Outcome run_in(v8::Local<v8::Context> context, std::string_view code) {
    // The code's own CPU time starts here: set-up (and the spec parse) is the host's cost.
    // Compiling counts: code that is not one expression may be read several ways.
    clockid_t cpu_clock{};
    pthread_getcpuclockid(pthread_self(), &cpu_clock);
    Watchdog watchdog(interrupts_, cpu_clock, std::chrono::milliseconds(limits_.cpu_ms),
                      wall_deadline_);
    if (!watchdog.usable()) {
      return channel::Outcome::failure(
          channel::ErrorKind::runtime,
          "the sandbox could not set its CPU and wall timers; nothing ran");
    }
    code_ = code;
    auto compiled = compile_code(context, code, interrupts_);
    if (std::holds_alternative<CompileStopped>(compiled)) return stopped();
    if (auto* failure = std::get_if<channel::Outcome>(&compiled)) return std::move(*failure);
    const CompiledCode& program = std::get<CompiledCode>(compiled);
    map_ = program.map;

    v8::TryCatch try_catch(isolate_);
    v8::Local<v8::Value> value;
    if (!program.script->Run(context).ToLocal(&value)) return failed(try_catch);
    // An async wrapper (statements, or an expression that awaits) is called first: its value is
    // the code's.
    for (int step = program.async_function ? 0 : 1; step < 2; ++step) {
      if (step == 1 && !value->IsFunction()) break;
      if (!value.As<v8::Function>()
               ->Call(context, v8::Undefined(isolate_), 0, nullptr)
               .ToLocal(&value)) {
        return failed(try_catch);
      }
      if (value->IsPromise()) {
        v8::Local<v8::Promise> promise = value.As<v8::Promise>();
        if (auto failure = drive(context, promise)) return std::move(*failure);
        if (promise->State() == v8::Promise::kRejected) return thrown(promise->Result());
        value = promise->Result();
      }
    }
    if (value->IsPromise()) {  // a bare expression's promise (`fetch('/x')`)
      v8::Local<v8::Promise> promise = value.As<v8::Promise>();
      if (auto failure = drive(context, promise)) return std::move(*failure);
      if (promise->State() == v8::Promise::kRejected) return thrown(promise->Result());
      value = promise->Result();
    }
    v8::Local<v8::Value> arguments[] = {
        value, v8::Number::New(isolate_, static_cast<double>(limits_.result_chars)),
        spec_view_ ? v8::Local<v8::Value>(spec_view_->refs())
                   : v8::Local<v8::Value>(v8::Undefined(isolate_))};
    v8::Local<v8::Value> json;
    if (!serialize_.Get(isolate_)
             ->Call(context, v8::Undefined(isolate_), 3, arguments)
             .ToLocal(&json)) {
      if (interrupts_.reason() != Stop::none || !try_catch.HasCaught()) return failed(try_catch);
      return channel::Outcome::failure(channel::ErrorKind::runtime,
                                       "result is not JSON-serialisable: " +
                                           describe_exception(isolate_, try_catch.Exception()));
    }
    if (interrupts_.reason() != Stop::none) return stopped();
    v8::Local<v8::Value> text;
    v8::Local<v8::Value> cut;
    if (!json->IsArray() || !json.As<v8::Array>()->Get(context, 0).ToLocal(&text) ||
        !json.As<v8::Array>()->Get(context, 1).ToLocal(&cut)) {
      return failed(try_catch);
    }
    channel::Outcome outcome = channel::Outcome::success(utf8(isolate_, text));
    outcome.result_cut = cut->BooleanValue(isolate_);
    return outcome;
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
  std::string_view code_;  // the code as sent, while run() runs
  CodeMap map_;            // from the compiled source back to the code as sent
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
  set_heap_constraints(params.constraints, heap_bytes);
  params.constraints.set_code_range_size_in_bytes(kCodeRangeBytes);
  params.array_buffer_allocator = &parts_->allocator;
  const FetchGlobal blob_fetch =
      request.tool == channel::Tool::execute ? request.fetch : FetchGlobal::absent;
  params.snapshot_blob = GlobalsSnapshot::get().blob(blob_fetch);
  params.external_references = external_references();
  params.oom_error_callback = out_of_memory_handler.load();
  // Given its context in the background, which is where a prepared isolate is until its call
  // comes; run() brings it to the foreground, so the call itself gets V8's usual heuristics.
  // (Before Initialize, where V8 10.2 took it as a flag and saved work on the deserialisation
  // too, V8 14 reaches for a heap that does not exist yet.)
  v8::Isolate* isolate = parts_->isolate = allocate_isolate();
  v8::Isolate::Initialize(isolate, params);
  GlobalsSnapshot::mark_blob(isolate, blob_fetch);
  isolate->IsolateInBackgroundNotification();
  v8::Isolate::Scope isolate_scope(isolate);
  isolate->SetMicrotasksPolicy(v8::MicrotasksPolicy::kExplicit);
  isolate->SetAllowAtomicsWait(false);
  isolate->SetAllowWasmCodeGenerationCallback(
      [](v8::Local<v8::Context>, v8::Local<v8::String>) { return false; });
  Interrupts& interrupts = parts_->interrupts.emplace(isolate);
  parts_->heap_watch = HeapWatch{&interrupts, &parts_->allocator, heap_bytes};
  watch_heap(isolate, &parts_->heap_watch);
  parts_->run.emplace(isolate, request_, interrupts, parts_->allocator).prepare();
}

PreparedIsolate::~PreparedIsolate() {
  v8::Isolate* isolate = parts_->isolate;
  {
    v8::Isolate::Scope isolate_scope(isolate);
    parts_->run.reset();  // its Globals go while the isolate lives
    unwatch_heap(isolate, &parts_->heap_watch);
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
