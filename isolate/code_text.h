// The code of a call as text, before V8 sees it: the tolerances of the tools' contract that are
// plain text work (README.md, "What the code may look like"), and quoting a line of it back with
// a caret. No V8 here; compile_code.cpp decides with V8 which reading of the code parses.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace codemode::isolate {

// The inside of one markdown fence (```js … ``` or ~~~ … ~~~, any info string) around the whole
// code, and how many lines come before it; the code itself when there is no such fence.
struct Unfenced {
  std::string_view code;
  std::size_t lines_before = 0;
};
Unfenced strip_fence(std::string_view code);

// The code without what may trail a last expression: whitespace, semicolons, a `/* … */` and a
// `// …` comment (found by a quote-aware scan of the last line; V8 has the last word, since the
// result is only ever compiled, never trusted).
std::string_view trim_tail(std::string_view code);

// Where a last expression statement may start, latest first: after a `;` or a line break, at
// most `max` of them. Each is only a candidate for V8 to accept or refuse.
std::vector<std::size_t> final_expression_starts(std::string_view code, std::size_t max);

// "line 3, column 12:\n  <the line>\n  <spaces>^" for 1-based `line` and 0-based `column`
// (UTF-16 units, as V8 counts; the caret is exact for ASCII). A long line is shown around the
// column. Empty when the code has no such line.
std::string quote_line(std::string_view code, std::size_t line, std::size_t column);

}  // namespace codemode::isolate
