#include "isolate/isolate_runner.h"

#include <pthread.h>
#include <time.h>

#include <v8.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "isolate/code_text.h"
#include "isolate/globals_snapshot.h"
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

using detail::CallState;
using detail::Clock;
using detail::compile;
using detail::describe_exception;
using detail::external_references;
using detail::GlobalsSnapshot;
using detail::Interrupts;
using detail::kMB;
using detail::one_line;
using detail::run_vendor_script;
using detail::Stop;
using detail::Timer;
using detail::utf8;
using detail::utf8_prefix;
using detail::Utf8Prefix;
using detail::v8_string;
using detail::Watchdog;

// How far past heap_mb the near-heap-limit callback lets the heap grow while a termination is on
// its way. V8 cannot fail an allocation: a limit it cannot allocate under aborts the process, and
// one uninterruptible builtin (String.prototype.split, JSON.stringify of a huge string) may need
// up to 1 GiB in one object on top of what is live. Past this, V8 aborts, as it would anyway.
constexpr std::size_t kMaxHeapOvershoot = 3072 * kMB;

// The least room V8's limit leaves above heap_mb's share of the old generation (see
// set_heap_constraints).
constexpr std::size_t kHeapMargin = 16 * kMB;

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

// After each collection: a heap holding more than heap_mb stops the call (V8's limit, above,
// is not reached by code that grows its heap step by step).
void heap_cap_after_gc(v8::Isolate* isolate, v8::GCType /*type*/, v8::GCCallbackFlags /*flags*/,
                       void* data) {
  auto* watch = static_cast<HeapWatch*>(data);
  v8::HeapStatistics stats;
  isolate->GetHeapStatistics(&stats);
  if (stats.used_heap_size() > watch->cap) watch->interrupts->trip(Stop::heap);
}

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

// Two wrappers around a piece of the code: the one that runs, and a check. The code must parse
// in both, whose innermost open brackets differ.
//
// Why two: a single wrapper like `(\n<code>\n)` is escapable, because the code may close the
// wrapper's bracket itself and smuggle statements in between (`1); evil(); (2`). So the code
// must parse in two wrappers whose innermost open bracket differs: `(\n<code>\n)` and
// `({[\n<code>\n]: 0})` for an expression, `{\n<code>\n}` and `{{\n<code>\n}}` for a body. Both
// parses see the same token stream for the code (after `(`, `[` and `{` the lexer is in the same
// state: a `/` starts a regex), so a bracket in the code that closes the wrapper's bracket would
// have to close the other's too, which no grammar allows: one of the two parses fails. Hence
// when both succeed the code is balanced and spans the whole inside of each wrapper. The
// computed property key `[ AssignmentExpression ]` also refuses a top-level comma. The
// newlines keep a trailing `//` comment from eating the closing bracket; an unterminated `/*`,
// string or template swallows the closing bracket and so fails to parse. Statements are no
// longer smuggled when they are allowed (a body), but the wrapper still decides what runs: the
// code is inside one function, so nothing of it runs outside the call's limits and order.
// Compiling runs nothing; the wrapper that runs is then run to get the value.
struct Wrapper {
  std::string_view open;
  std::string_view close;
};
struct Form {
  Wrapper run;
  Wrapper check;
  bool async_function;  // the script's value is an async function to call first
};
// The code's value: an expression (a function, as the contract has always asked, or any value).
constexpr Form kExpression{{"(\n", "\n)"}, {"({[\n", "\n]: 0})"}, false};
// A bare expression that awaits (`(await fetch('/x')).status`).
constexpr Form kAwaitedExpression{
    {"(async () => (\n", "\n))"}, {"(async () => ({[\n", "\n]: 0}))"}, true};
// Statements, `return` and top-level `await`: the body of an async function.
constexpr Form kBody{{"(async () => {\n", "\n})"}, {"(async () => {{\n", "\n}})"}, true};
// Elements of an array literal: with kExpression.run, the check that code is a comma-separated
// list of expressions (compile_readings refuses one).
constexpr Wrapper kList{"[\n", "\n]"};

std::string wrap(const Wrapper& wrapper, std::string_view code) {
  std::string out;
  out.reserve(wrapper.open.size() + code.size() + wrapper.close.size());
  out += wrapper.open;
  out += code;
  out += wrapper.close;
  return out;
}

// Where V8 refused a piece of code, in the wrapped source.
struct SyntaxFailure {
  std::string message;  // "SyntaxError: …", or "terminated"
  int line = 0;         // 1-based, in the wrapped source; 0: unknown
  int column = 0;       // 0-based
};

std::variant<v8::Local<v8::Script>, SyntaxFailure> compile_source(v8::Local<v8::Context> context,
                                                                  const std::string& source) {
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  v8::TryCatch try_catch(isolate);
  v8::Local<v8::Script> script;
  if (compile(context, source, "code.js", -1).ToLocal(&script)) return script;
  SyntaxFailure failure;
  if (try_catch.HasTerminated()) {
    failure.message = "terminated";
    return failure;
  }
  if (!try_catch.HasCaught()) {
    failure.message = "SyntaxError: the code does not parse";
    return failure;
  }
  failure.message = describe_exception(isolate, try_catch.Exception());
  v8::Local<v8::Message> message = try_catch.Message();
  if (!message.IsEmpty()) {
    failure.line = message->GetLineNumber(context).FromMaybe(0);
    failure.column = message->GetStartColumn(context).FromMaybe(0);
  }
  return failure;
}

// Compiles `code` in `form`'s two wrappers: the script of the wrapper that runs, or why the
// code does not parse that way.
std::variant<v8::Local<v8::Script>, SyntaxFailure> compile_in(v8::Local<v8::Context> context,
                                                              std::string_view code,
                                                              const Form& form) {
  auto checked = compile_source(context, wrap(form.check, code));
  if (auto* failure = std::get_if<SyntaxFailure>(&checked)) return std::move(*failure);
  return compile_source(context, wrap(form.run, code));
}

// Compiles the code as exactly one expression, or returns the SyntaxError text. The calls'
// rehearsal and the fast path of every call: code that is one expression, as models usually
// send it, costs what it always did.
std::variant<v8::Local<v8::Script>, std::string> compile_one_expression(
    v8::Local<v8::Context> context, std::string_view code) {
  auto compiled = compile_in(context, code, kExpression);
  if (auto* failure = std::get_if<SyntaxFailure>(&compiled)) return std::move(failure->message);
  return std::get<v8::Local<v8::Script>>(compiled);
}

// Where a line and column of a wrapped source are in the code as sent: the wrapper's own first
// line, the lines a markdown fence took, and (helpers before a last expression) the column at
// which the last expression started on its line.
struct CodeMap {
  int lines_before = 0;    // lines of the code as sent before the compiled text (a fence)
  int tail_line = 0;       // helpers form: wrapped line where the last expression starts; 0: none
  int tail_code_line = 0;  // ... its line in the compiled text (1-based)
  int tail_column = 0;     // ... its column there
  // 1-based line and 0-based column in the code as sent, from a line as V8 reports it: the
  // scripts are compiled one line up (origin -1, v8_text.h's compile), so that the wrapped
  // source's second line, where the code starts, is line 1.
  std::pair<int, int> to_code(int reported_line, int column) const {
    const int line = reported_line + 1;
    if (tail_line > 0 && line >= tail_line) {
      const int code_line = tail_code_line + (line - tail_line);
      return {code_line + lines_before, line == tail_line ? column + tail_column : column};
    }
    return {line - 1 + lines_before, column};
  }
};

// What the code compiled to, and how to run it.
struct CompiledCode {
  v8::Local<v8::Script> script;
  bool async_function = false;
  CodeMap map;
};

int count_lines(std::string_view text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

// The ways the tools' contract reads a text that is not one expression as sent, in order: one
// expression (after a fence and trailing semicolons and comments are gone), an expression that
// awaits, statements followed by a last expression (helpers before the function, or a body whose
// last statement is its value), a function body. Only tried when the fast path failed.
std::optional<CompiledCode> compile_readings(v8::Local<v8::Context> context, std::string_view text,
                                             int lines_before, SyntaxFailure& body_failure) {
  CompiledCode out;
  out.map.lines_before = lines_before;
  const std::string_view trimmed = trim_tail(text);
  SyntaxFailure expression_failure;
  for (const Form* form : {&kExpression, &kAwaitedExpression}) {
    auto compiled = compile_in(context, trimmed, *form);
    if (auto* script = std::get_if<v8::Local<v8::Script>>(&compiled)) {
      out.script = *script;
      out.async_function = form->async_function;
      return out;
    }
    if (std::get<SyntaxFailure>(compiled).message == "terminated") return std::nullopt;
    if (form == &kExpression) expression_failure = std::get<SyntaxFailure>(std::move(compiled));
  }
  // One expression with a comma at its top (`async () => 1, 17`): JavaScript's value would be
  // the last operand, the function never called, and read as a body it would run and return
  // nothing. Neither is what was meant, so it is refused where the computed key of kExpression's
  // check refused it, at the comma. It parses in `(…)` and in `[…]`, whose innermost brackets
  // differ (Wrapper says why that makes it balanced): an expression list, not smuggling.
  if (std::holds_alternative<v8::Local<v8::Script>>(
          compile_source(context, wrap(kExpression.run, trimmed))) &&
      std::holds_alternative<v8::Local<v8::Script>>(
          compile_source(context, wrap(kList, trimmed)))) {
    body_failure = std::move(expression_failure);
    body_failure.message =
        "SyntaxError: a comma joins two expressions here, so the code is not one function or "
        "value";
    return std::nullopt;
  }
  constexpr std::size_t kMaxSplits = 24;
  for (const std::size_t start : final_expression_starts(trimmed, kMaxSplits)) {
    const std::string_view last = trimmed.substr(start);
    const std::string_view helpers = trimmed.substr(0, start);
    if (!std::holds_alternative<v8::Local<v8::Script>>(
            compile_source(context, wrap(kAwaitedExpression.check, last)))) {
      continue;
    }
    if (!std::holds_alternative<v8::Local<v8::Script>>(
            compile_source(context, wrap(kBody.check, helpers)))) {
      continue;
    }
    // Both parts are balanced on their own (their check wrappers say so): joined, the helpers
    // run and the last expression is the value.
    std::string joined(kBody.run.open);
    joined += helpers;
    joined += "\nreturn (\n";
    joined += last;
    joined += "\n);\n})";
    auto compiled = compile_source(context, joined);
    if (auto* script = std::get_if<v8::Local<v8::Script>>(&compiled)) {
      out.script = *script;
      out.async_function = true;
      const int helper_lines = count_lines(helpers);
      const std::size_t line_start = helpers.rfind('\n');
      out.map.tail_line = 1 + helper_lines + 2 + 1;
      out.map.tail_code_line = 1 + helper_lines;
      out.map.tail_column =
          static_cast<int>(line_start == std::string_view::npos ? start : start - line_start - 1);
      return out;
    }
  }
  auto compiled = compile_in(context, text, kBody);
  if (auto* script = std::get_if<v8::Local<v8::Script>>(&compiled)) {
    out.script = *script;
    out.async_function = true;
    return out;
  }
  body_failure = std::get<SyntaxFailure>(std::move(compiled));
  return std::nullopt;
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

  // The code's TypeScript removed by sucrase (js/vendor/sucrase.js, compiled into this call's
  // context from source before any of the code has run, so nothing the code does can reach
  // it), or why sucrase refused it. Types only: no checking, and the lines stay where they were.
  struct Stripped {
    std::string code;
    std::string error;  // sucrase's message, when it refused
    int offset = -1;    // where in the text it refused
  };
  std::optional<Stripped> strip_types(v8::Local<v8::Context> context, std::string_view text) {
    v8::TryCatch try_catch(isolate_);
    v8::Local<v8::Value> factory;
    v8::Local<v8::Value> module;
    v8::Local<v8::Value> strip;
    v8::Local<v8::Value> argument = v8_string(isolate_, text);
    v8::Local<v8::Value> result;
    if (!run_vendor_script(context, detail::Vendor::sucrase).ToLocal(&factory) ||
        !factory->IsFunction() ||
        !factory.As<v8::Function>()
             ->Call(context, v8::Undefined(isolate_), 0, nullptr)
             .ToLocal(&module) ||
        !module->IsObject() ||
        !module.As<v8::Object>()->Get(context, v8_string(isolate_, "strip")).ToLocal(&strip) ||
        !strip->IsFunction() ||
        !strip.As<v8::Function>()
             ->Call(context, v8::Undefined(isolate_), 1, &argument)
             .ToLocal(&result) ||
        !result->IsObject()) {
      return std::nullopt;
    }
    auto field = [&](const char* name) {
      v8::Local<v8::Value> value;
      if (!result.As<v8::Object>()->Get(context, v8_string(isolate_, name)).ToLocal(&value)) {
        return v8::Local<v8::Value>(v8::Undefined(isolate_));
      }
      return value;
    };
    Stripped out;
    v8::Local<v8::Value> code = field("code");
    if (code->IsString()) {
      out.code = utf8(isolate_, code);
      // Still before any of the code has run: the cache holds only sucrase's own functions.
      detail::keep_code_cache(context, detail::Vendor::sucrase);
      return out;
    }
    out.error = one_line(utf8(isolate_, field("message")));
    v8::Local<v8::Value> offset = field("pos");
    if (offset->IsNumber()) out.offset = static_cast<int>(offset.As<v8::Number>()->Value());
    return out;
  }

  // Compiles the code by the tools' contract (README.md, "What the code may look like"): as
  // sent if it is one expression (the fast path, which is all a call of the usual shape pays);
  // otherwise the other readings of compile_readings, of the code inside one markdown fence,
  // then of the same with its TypeScript types removed. The failure names where the code does
  // not parse, in the code as sent.
  std::variant<CompiledCode, channel::Outcome> compile_code(v8::Local<v8::Context> context,
                                                            std::string_view code) {
    code_ = code;
    // A fence first: ```js … ``` is also one expression (tagged templates) that means nothing.
    const Unfenced unfenced = strip_fence(code);
    if (unfenced.code.size() == code.size()) {
      auto fast = compile_in(context, code, kExpression);
      if (auto* script = std::get_if<v8::Local<v8::Script>>(&fast)) {
        return CompiledCode{*script, false, CodeMap{}};
      }
      if (std::get<SyntaxFailure>(fast).message == "terminated") return stopped();
    }
    if (trim_tail(unfenced.code).empty()) {
      return channel::Outcome::failure(channel::ErrorKind::compile,
                                       "the code is empty (only whitespace or comments)");
    }
    const int lines_before = static_cast<int>(unfenced.lines_before);
    SyntaxFailure failure;
    if (auto compiled = compile_readings(context, unfenced.code, lines_before, failure)) {
      return *compiled;
    }
    if (interrupts_.reason() != Stop::none) return stopped();
    SyntaxFailure js_failure = failure;
    std::optional<Stripped> stripped = strip_types(context, unfenced.code);
    if (interrupts_.reason() != Stop::none) return stopped();
    if (stripped && stripped->error.empty() && stripped->code != unfenced.code) {
      stripped_ = std::move(stripped->code);
      if (auto compiled = compile_readings(context, stripped_, lines_before, failure)) {
        return *compiled;
      }
      if (interrupts_.reason() != Stop::none) return stopped();
      js_failure = failure;
    }
    CodeMap body_map;
    body_map.lines_before = lines_before;
    auto [line, column] = js_failure.line > 0 ? body_map.to_code(js_failure.line, js_failure.column)
                                              : std::pair<int, int>{0, 0};
    std::string message = js_failure.message;
    // Sucrase read further than V8 did: V8 stopped at TypeScript, and sucrase's complaint is
    // the code's real problem.
    if (stripped && !stripped->error.empty() && stripped->offset >= 0) {
      const std::string_view text = unfenced.code.substr(
          0,
          std::min<std::size_t>(static_cast<std::size_t>(stripped->offset), unfenced.code.size()));
      const int ts_line = count_lines(text) + 1;
      const std::size_t line_start = text.rfind('\n');
      const int ts_column = static_cast<int>(
          line_start == std::string_view::npos ? text.size() : text.size() - line_start - 1);
      // On a later line only: on V8's own line, V8's message is the better one.
      if (js_failure.line == 0 || ts_line + lines_before > line) {
        line = ts_line + lines_before;
        column = ts_column;
        std::string error = stripped->error;
        // Sucrase appends " (line:column)", which the quote below says better.
        if (const std::size_t at = error.rfind(" (");
            at != std::string::npos && error.ends_with(")")) {
          error.resize(at);
        }
        message = "SyntaxError: " + error;
      }
    }
    channel::Outcome outcome = channel::Outcome::failure(channel::ErrorKind::compile, message);
    outcome.error_detail = line > 0 ? quote_line(code, static_cast<std::size_t>(line),
                                                 static_cast<std::size_t>(std::max(column, 0)))
                                    : std::string();
    add_hint(outcome, compile_hint(code, message));
    return outcome;
  }

  // What to do about the usual mistakes a compile error comes from.
  static std::string compile_hint(std::string_view code, std::string_view message) {
    if (message.find("import") != std::string_view::npos ||
        message.find("export") != std::string_view::npos) {
      return "modules are not available: no import, export or require; use the globals the "
             "tool's description lists";
    }
    if (code.find("```") != std::string_view::npos) {
      return "send the code alone, or inside one markdown fence";
    }
    return "send one function such as async () => { …; return value; }, or statements that end "
           "in return";
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
  static void add_hint(channel::Outcome& outcome, const std::string& hint) {
    if (hint.empty()) return;
    if (!outcome.error_detail.empty()) outcome.error_detail += '\n';
    outcome.error_detail += "hint: " + hint;
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
    auto compiled = compile_code(context, code);
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
  std::string stripped_;   // the code with its TypeScript removed, when that was needed
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
  isolate->AddNearHeapLimitCallback(near_heap_limit, &parts_->heap_watch);
  isolate->AddGCEpilogueCallback(heap_cap_after_gc, &parts_->heap_watch);
  parts_->run.emplace(isolate, request_, interrupts, parts_->allocator).prepare();
}

PreparedIsolate::~PreparedIsolate() {
  v8::Isolate* isolate = parts_->isolate;
  {
    v8::Isolate::Scope isolate_scope(isolate);
    parts_->run.reset();  // its Globals go while the isolate lives
    isolate->RemoveGCEpilogueCallback(heap_cap_after_gc, &parts_->heap_watch);
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
