#include "isolate/code_text.h"

#include <catch2/catch.hpp>

namespace codemode::isolate {
namespace {

TEST_CASE("one markdown fence is taken off, with the lines it took", "[isolate][code_text]") {
  const Unfenced ts = strip_fence("```ts\nasync () => 1\n```");
  CHECK(ts.code == "async () => 1");
  CHECK(ts.lines_before == 1);
  CHECK(strip_fence("\n```javascript\nconst a = 1;\nreturn a;\n```\n").code ==
        "const a = 1;\nreturn a;");
  CHECK(strip_fence("\n```javascript\nx\n```\n").lines_before == 2);
  CHECK(strip_fence("~~~\nx\n~~~").code == "x");
  // Not one fence: left as sent, for V8 to refuse.
  CHECK(strip_fence("```js\na\n```\n```js\nb\n```").code == "```js\na\n```\n```js\nb\n```");
  CHECK(strip_fence("async () => '```'").code == "async () => '```'");
  CHECK(strip_fence("```js async () => 1```").lines_before == 0);
}

TEST_CASE("trailing semicolons and comments are trimmed, quotes respected",
          "[isolate][code_text]") {
  CHECK(trim_tail("async () => 1;") == "async () => 1");
  CHECK(trim_tail("async () => 1; // done\n\n") == "async () => 1");
  CHECK(trim_tail("async () => 1 /* a */ ;  ") == "async () => 1");
  CHECK(trim_tail("f('http://x') // call") == "f('http://x')");
  CHECK(trim_tail("f('http://x')") == "f('http://x')");
  CHECK(trim_tail("a;\n// one\n// two") == "a");
}

TEST_CASE("a last expression may start after a semicolon or a line break", "[isolate][code_text]") {
  const auto starts = final_expression_starts("const a = 1;\nconst b = 2; a + b", 10);
  REQUIRE(starts.size() == 2);
  CHECK(starts[0] == 25);  // " a + b"
  CHECK(starts[1] == 13);  // "const b = 2; a + b" (after the line break; the ; before it adds none)
  CHECK(final_expression_starts("a;b;c;d", 2).size() == 2);
  CHECK(final_expression_starts("a;\n  ", 5).empty());
}

TEST_CASE("a line is quoted with a caret under its column", "[isolate][code_text]") {
  CHECK(quote_line("a\n  fetch('/x';\nb", 2, 13) ==
        "line 2, column 14:\n    fetch('/x';\n               ^");
  CHECK(quote_line("x", 3, 0).empty());
  const std::string long_line(300, 'x');
  const std::string quoted = quote_line(long_line, 1, 200);
  CHECK(quoted.find("…") != std::string::npos);
  CHECK(quoted.size() < 300);
}

}  // namespace
}  // namespace codemode::isolate
