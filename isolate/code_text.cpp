#include "isolate/code_text.h"

#include <algorithm>

namespace codemode::isolate {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

// Where a `//` comment starts on `line`, outside quotes, or npos.
std::size_t line_comment(std::string_view line) {
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if (c == '\'' || c == '"' || c == '`') {
      quote = c;
    } else if (c == '/' && i + 1 < line.size() && line[i + 1] == '/') {
      return i;
    } else if (c == '/' && i + 1 < line.size() && line[i + 1] == '*') {
      const std::size_t end = line.find("*/", i + 2);
      if (end == std::string_view::npos) return std::string_view::npos;
      i = end + 1;
    }
  }
  return std::string_view::npos;
}

}  // namespace

Unfenced strip_fence(std::string_view code) {
  const std::string_view inner = trim(code);
  for (std::string_view fence : {std::string_view("```"), std::string_view("~~~")}) {
    if (!inner.starts_with(fence) || inner.size() < 2 * fence.size()) continue;
    const std::size_t open_end = inner.find('\n');
    if (open_end == std::string_view::npos) continue;
    // The info string (`ts`, `javascript`) holds no fence character.
    if (inner.substr(fence.size(), open_end - fence.size()).find(fence[0]) !=
        std::string_view::npos) {
      continue;
    }
    if (!inner.ends_with(fence)) continue;
    std::string_view body = inner.substr(open_end + 1, inner.size() - fence.size() - open_end - 1);
    while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.remove_suffix(1);
    // Exactly one fence: the body holds no line opening another.
    if (body.find(std::string("\n") + std::string(fence)) != std::string_view::npos ||
        body.starts_with(fence)) {
      continue;
    }
    const std::size_t start = static_cast<std::size_t>(body.data() - code.data());
    return Unfenced{body, static_cast<std::size_t>(std::count(
                              code.begin(), code.begin() + static_cast<long>(start), '\n'))};
  }
  return Unfenced{code, 0};
}

std::string_view trim_tail(std::string_view code) {
  for (;;) {
    const std::size_t before = code.size();
    while (!code.empty() && (is_space(code.back()) || code.back() == ';')) code.remove_suffix(1);
    if (code.ends_with("*/")) {
      const std::size_t open = code.rfind("/*", code.size() - 2);
      if (open != std::string_view::npos) code = code.substr(0, open);
    }
    const std::size_t line_start =
        code.rfind('\n') == std::string_view::npos ? 0 : code.rfind('\n') + 1;
    const std::size_t comment = line_comment(code.substr(line_start));
    if (comment != std::string_view::npos) code = code.substr(0, line_start + comment);
    if (code.size() == before) return code;
  }
}

std::vector<std::size_t> final_expression_starts(std::string_view code, std::size_t max) {
  std::vector<std::size_t> out;
  for (std::size_t i = code.size(); i > 0 && out.size() < max; --i) {
    const char c = code[i - 1];
    if (c != ';' && c != '\n') continue;
    if (trim(code.substr(i)).empty()) continue;
    // ";\n" starts the same expression twice: once is enough.
    if (!out.empty() && trim(code.substr(i)) == trim(code.substr(out.back()))) continue;
    out.push_back(i);
  }
  return out;
}

std::string quote_line(std::string_view code, std::size_t line, std::size_t column) {
  if (line == 0) return {};
  std::size_t start = 0;
  for (std::size_t n = 1; n < line; ++n) {
    const std::size_t next = code.find('\n', start);
    if (next == std::string_view::npos) return {};
    start = next + 1;
  }
  std::string_view text = code.substr(start, code.find('\n', start) - start);
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  constexpr std::size_t kShown = 120;
  std::size_t from = 0;
  if (text.size() > kShown && column > kShown / 2) {
    from = std::min(column - kShown / 2, text.size() - std::min(text.size(), kShown));
  }
  std::string shown(text.substr(from, kShown));
  std::string caret;
  for (std::size_t i = from; i < column && i < text.size(); ++i)
    caret += text[i] == '\t' ? '\t' : ' ';
  std::string out =
      "line " + std::to_string(line) + ", column " + std::to_string(column + 1) + ":\n  ";
  out += (from > 0 ? "…" : "") + shown + (from + kShown < text.size() ? "…" : "");
  out += "\n  " + std::string(from > 0 ? " " : "") + caret + "^";
  return out;
}

}  // namespace codemode::isolate
