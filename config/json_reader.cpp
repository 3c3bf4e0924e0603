#include "config/json_reader.h"

#include <algorithm>
#include <array>

namespace codemode::config::detail {

namespace {

class DocumentBuilder final : public nlohmann::json_sax<Json> {
 public:
  static constexpr std::size_t kMaxNesting = 64;

  DocumentBuilder(std::string_view text, std::vector<std::string>& problems)
      : text_(text), problems_(problems) {}

  Json take_root() { return std::move(root_); }

  bool null() override { return add_value(Json(nullptr)); }
  bool boolean(bool value) override { return add_value(Json(value)); }
  bool number_integer(number_integer_t value) override { return add_value(Json(value)); }
  bool number_unsigned(number_unsigned_t value) override { return add_value(Json(value)); }
  bool number_float(number_float_t value, const string_t& /*text*/) override {
    return add_value(Json(value));
  }
  bool string(string_t& value) override { return add_value(Json(std::move(value))); }
  bool binary(binary_t& /*value*/) override { return false; }  // not produced by JSON text

  bool start_object(std::size_t /*elements*/) override { return open(Json::object()); }
  bool key(string_t& key) override {
    Frame& frame = stack_.back();
    if (frame.node->contains(key)) {
      problems_.push_back(child_path(frame.path, key) +
                          ": duplicate key (a later value would silently replace an earlier one)");
    }
    frame.key = std::move(key);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t /*elements*/) override { return open(Json::array()); }
  bool end_array() override { return close(); }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& error) override {
    // `position` counts bytes read, including the offending one (or the end of the input).
    const std::size_t offset = std::min(position == 0 ? 0 : position - 1, text_.size());
    const std::string_view before = text_.substr(0, offset);
    const auto line = 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
    const std::size_t newline = before.rfind('\n');
    const std::size_t line_start = newline == std::string_view::npos ? 0 : newline + 1;
    const std::size_t column = 1 + code_points(before.substr(line_start), offset - line_start);
    problems_.push_back("line " + std::to_string(line) + ", column " + std::to_string(column) +
                        ": " + describe(error));
    return false;
  }

 private:
  struct Frame {
    Json* node;
    std::string path;  // where `node` sits
    std::string key;   // for objects: the key whose value comes next
  };

  // nlohmann's text is "[json.exception.parse_error.101] parse error at line 1, column 2:
  // syntax error while parsing value - invalid literal; last read: 'tru'; expected ...". The
  // last-read part echoes file text, which may be a credential written in place, so only the
  // error and a recognised "; expected <token kind>" tail are kept.
  static std::string describe(const nlohmann::detail::exception& error) {
    if (error.id == 406) return "number out of range";
    const std::string_view text = error.what();
    const std::size_t start = text.find("syntax error");
    const std::size_t dash = text.find(" - ", start);
    if (start == std::string_view::npos || dash == std::string_view::npos) return "syntax error";
    std::string_view detail = text.substr(dash + 3);
    std::string_view expected;
    static constexpr std::array<std::string_view, 16> kTokenKinds = {"<uninitialized>",
                                                                     "true literal",
                                                                     "false literal",
                                                                     "null literal",
                                                                     "string literal",
                                                                     "number literal",
                                                                     "'['",
                                                                     "'{'",
                                                                     "']'",
                                                                     "'}'",
                                                                     "':'",
                                                                     "','",
                                                                     "<parse error>",
                                                                     "end of input",
                                                                     "'[', '{', or a literal",
                                                                     "unknown token"};
    for (const std::string_view kind : kTokenKinds) {
      const std::string tail = "; expected " + std::string(kind);
      if (detail.ends_with(tail)) {
        expected = detail.substr(detail.size() - tail.size());
        detail.remove_suffix(tail.size());
        break;
      }
    }
    detail = detail.substr(0, detail.find("; last read: "));
    return "syntax error: " + std::string(detail) + std::string(expected);
  }

  std::string path_of_next_value() const {
    if (stack_.empty()) return {};
    const Frame& parent = stack_.back();
    return parent.node->is_array() ? element_path(parent.path, parent.node->size())
                                   : child_path(parent.path, parent.key);
  }

  // Puts a value where the parser is: the root, the next array element, or the pending key.
  Json* place(Json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Json& parent = *stack_.back().node;
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    Json& slot = parent[stack_.back().key];
    slot = std::move(value);
    return &slot;
  }

  bool add_value(Json value) {
    place(std::move(value));
    return true;
  }

  bool open(Json container) {
    // Nothing in the schema nests past a few levels; the bound keeps a hostile file from
    // growing the frame stack (and each frame's path) without limit.
    if (stack_.size() >= kMaxNesting) {
      problems_.push_back(path_of_next_value() + ": nested deeper than " +
                          std::to_string(kMaxNesting) + " levels");
      return false;
    }
    std::string path = path_of_next_value();
    // The parent does not grow while this child is open, so the pointer stays valid.
    Json* node = place(std::move(container));
    stack_.push_back(Frame{node, std::move(path), {}});
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  std::string_view text_;
  std::vector<std::string>& problems_;
  Json root_;
  std::vector<Frame> stack_;
};

}  // namespace

std::optional<Json> read_json(std::string_view text, std::vector<std::string>& problems) {
  DocumentBuilder builder(text, problems);
  if (!Json::sax_parse(text.begin(), text.end(), &builder)) return std::nullopt;
  return builder.take_root();
}

}  // namespace codemode::config::detail
