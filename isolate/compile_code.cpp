#include "isolate/compile_code.h"

#include <v8.h>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "isolate/code_text.h"
#include "isolate/globals_snapshot.h"
#include "isolate/v8_text.h"

namespace codemode::isolate::detail {

namespace {

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

// The code's TypeScript removed by sucrase (js/vendor/sucrase.js, compiled into this call's
// context from source before any of the code has run, so nothing the code does can reach
// it), or why sucrase refused it. Types only: no checking, and the lines stay where they were.
struct Stripped {
  std::string code;
  std::string error;  // sucrase's message, when it refused
  int offset = -1;    // where in the text it refused
};
std::optional<Stripped> strip_types(v8::Local<v8::Context> context, std::string_view text) {
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  v8::TryCatch try_catch(isolate);
  v8::Local<v8::Value> factory;
  v8::Local<v8::Value> module;
  v8::Local<v8::Value> strip;
  v8::Local<v8::Value> argument = v8_string(isolate, text);
  v8::Local<v8::Value> result;
  if (!run_vendor_script(context, detail::Vendor::sucrase).ToLocal(&factory) ||
      !factory->IsFunction() ||
      !factory.As<v8::Function>()
           ->Call(context, v8::Undefined(isolate), 0, nullptr)
           .ToLocal(&module) ||
      !module->IsObject() ||
      !module.As<v8::Object>()->Get(context, v8_string(isolate, "strip")).ToLocal(&strip) ||
      !strip->IsFunction() ||
      !strip.As<v8::Function>()
           ->Call(context, v8::Undefined(isolate), 1, &argument)
           .ToLocal(&result) ||
      !result->IsObject()) {
    return std::nullopt;
  }
  auto field = [&](const char* name) {
    v8::Local<v8::Value> value;
    if (!result.As<v8::Object>()->Get(context, v8_string(isolate, name)).ToLocal(&value)) {
      return v8::Local<v8::Value>(v8::Undefined(isolate));
    }
    return value;
  };
  Stripped out;
  v8::Local<v8::Value> code = field("code");
  if (code->IsString()) {
    out.code = utf8(isolate, code);
    // Still before any of the code has run: the cache holds only sucrase's own functions.
    detail::keep_code_cache(context, detail::Vendor::sucrase);
    return out;
  }
  out.error = one_line(utf8(isolate, field("message")));
  v8::Local<v8::Value> offset = field("pos");
  if (offset->IsNumber()) out.offset = static_cast<int>(offset.As<v8::Number>()->Value());
  return out;
}

// What to do about the usual mistakes a compile error comes from.
std::string compile_hint(std::string_view code, std::string_view message) {
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

// The compile error of code that parses in no reading: where V8 refused its JavaScript reading,
// unless sucrase, refusing its TypeScript, read further (`stripped`); the line quoted from the
// code as sent, and a hint.
channel::Outcome compile_failure(std::string_view code, std::string_view unfenced_code,
                                 int lines_before, const SyntaxFailure& js_failure,
                                 const std::optional<Stripped>& stripped) {
  CodeMap body_map;
  body_map.lines_before = lines_before;
  auto [line, column] = js_failure.line > 0 ? body_map.to_code(js_failure.line, js_failure.column)
                                            : std::pair<int, int>{0, 0};
  std::string message = js_failure.message;
  // Sucrase read further than V8 did: V8 stopped at TypeScript, and sucrase's complaint is
  // the code's real problem.
  if (stripped && !stripped->error.empty() && stripped->offset >= 0) {
    const std::string_view text = unfenced_code.substr(
        0, std::min<std::size_t>(static_cast<std::size_t>(stripped->offset), unfenced_code.size()));
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

}  // namespace

std::variant<v8::Local<v8::Script>, std::string> compile_one_expression(
    v8::Local<v8::Context> context, std::string_view code) {
  auto compiled = compile_in(context, code, kExpression);
  if (auto* failure = std::get_if<SyntaxFailure>(&compiled)) return std::move(failure->message);
  return std::get<v8::Local<v8::Script>>(compiled);
}

std::variant<CompiledCode, channel::Outcome, CompileStopped> compile_code(
    v8::Local<v8::Context> context, std::string_view code, const Interrupts& interrupts) {
  // A fence first: ```js … ``` is also one expression (tagged templates) that means nothing.
  const Unfenced unfenced = strip_fence(code);
  if (unfenced.code.size() == code.size()) {
    auto fast = compile_in(context, code, kExpression);
    if (auto* script = std::get_if<v8::Local<v8::Script>>(&fast)) {
      return CompiledCode{*script, false, CodeMap{}};
    }
    if (std::get<SyntaxFailure>(fast).message == "terminated") return CompileStopped{};
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
  if (interrupts.reason() != Stop::none) return CompileStopped{};
  SyntaxFailure js_failure = failure;
  std::optional<Stripped> stripped = strip_types(context, unfenced.code);
  if (interrupts.reason() != Stop::none) return CompileStopped{};
  if (stripped && stripped->error.empty() && stripped->code != unfenced.code) {
    if (auto compiled = compile_readings(context, stripped->code, lines_before, failure)) {
      return *compiled;
    }
    if (interrupts.reason() != Stop::none) return CompileStopped{};
    js_failure = failure;
  }
  return compile_failure(code, unfenced.code, lines_before, js_failure, stripped);
}

void add_hint(channel::Outcome& outcome, const std::string& hint) {
  if (hint.empty()) return;
  if (!outcome.error_detail.empty()) outcome.error_detail += '\n';
  outcome.error_detail += "hint: " + hint;
}

}  // namespace codemode::isolate::detail
