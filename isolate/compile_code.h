// The code of a call compiled by the tools' contract (README.md, "What the code may look like"),
// with V8: the wrappers it cannot escape, which reading of the text parses (code_text.h has the
// plain-text part), and where a line of what was compiled is in the code as sent. Internal to
// isolate/.
//
// Threads: the call's thread, inside its isolate and context, like every V8 call.
#pragma once

#include <v8.h>

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "channel/outcome.h"
#include "isolate/interrupts.h"

namespace codemode::isolate::detail {

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

// A limit tripped while the code was compiled: the caller reports which (Interrupts::reason()).
struct CompileStopped {};

// Compiles the code as exactly one expression, or returns the SyntaxError text. The calls'
// rehearsal and the fast path of every call: code that is one expression, as models usually
// send it, costs what it always did.
std::variant<v8::Local<v8::Script>, std::string> compile_one_expression(
    v8::Local<v8::Context> context, std::string_view code);

// Compiles the code by the tools' contract (README.md, "What the code may look like"): as
// sent if it is one expression (the fast path, which is all a call of the usual shape pays);
// otherwise the other readings of compile_readings, of the code inside one markdown fence,
// then of the same with its TypeScript types removed. The failure names where the code does
// not parse, in the code as sent. CompileStopped: a limit tripped (`interrupts` says which).
std::variant<CompiledCode, channel::Outcome, CompileStopped> compile_code(
    v8::Local<v8::Context> context, std::string_view code, const Interrupts& interrupts);

// Appends "hint: …" to the outcome's error detail, on a line of its own; nothing when empty.
void add_hint(channel::Outcome& outcome, const std::string& hint);

}  // namespace codemode::isolate::detail
