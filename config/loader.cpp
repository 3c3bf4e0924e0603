// The Loader's shared machinery (config/loader.h): problems and where they are, type checks with
// typo suggestions for unknown keys, strings after `${ENV}` expansion, origins, files and
// integers in a range. The sections build on these.
#include "config/loader.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <system_error>
#include <variant>

#include "net/ascii.h"
#include "net/origin.h"

namespace codemode::config::detail {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxSuggestionDistance = 2;  // edits between an unknown key and a known one

using net::is_alpha;
using net::is_digit;
using net::lower;

// Optimal string alignment distance, case-insensitive: a transposition counts as one edit.
std::size_t edit_distance(std::string_view a_text, std::string_view b_text) {
  const std::string a = lower(a_text);
  const std::string b = lower(b_text);
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// ---------------------------------------------------------------------------------------------
// Origins: scheme://host[:port] and nothing else, normalised.

struct OriginCheck {
  std::string origin;  // normalised; empty when `problem` is set
  std::string problem;
};

// The grammar is net::parse_origin's, shared with the Origin header check so that both sides
// write the same origin the same way; the words are the config's.
std::string_view describe(net::OriginError error) {
  switch (error) {
    case net::OriginError::no_separator:
      return "expected scheme://host[:port], e.g. https://api.example.com";
    case net::OriginError::scheme:
      return "scheme must be http or https";
    case net::OriginError::path:
      return "must not contain a path (only scheme://host[:port])";
    case net::OriginError::query:
      return "must not contain a query";
    case net::OriginError::fragment:
      return "must not contain a fragment";
    case net::OriginError::userinfo:
      return "must not contain userinfo (user@)";
    case net::OriginError::unterminated_ipv6:
      return "unterminated IPv6 address";
    case net::OriginError::invalid_ipv6:
      return "invalid IPv6 address";
    case net::OriginError::after_ipv6:
      return "unexpected characters after the IPv6 address";
    case net::OriginError::missing_host:
      return "missing host";
    case net::OriginError::empty_label:
      return "host has an empty label";
    case net::OriginError::host_character:
      return "host may contain only ASCII letters, digits, '-', '_' and '.' (write international "
             "names in their xn-- form)";
    case net::OriginError::port:
      return "port must be a number from 1 to 65535";
  }
  return "is not an origin";
}

// A trailing "/" is accepted: people write "https://api.example.com/" for the same origin.
OriginCheck normalise_origin(std::string_view text) {
  const auto result = net::parse_origin(text, net::OriginForm::trailing_slash);
  if (const auto* error = std::get_if<net::OriginError>(&result)) {
    return OriginCheck{{}, std::string(describe(*error))};
  }
  return OriginCheck{std::get<net::Origin>(result).serialised(), {}};
}

}  // namespace

bool is_name_char(char c) { return is_alpha(c) || is_digit(c) || c == '.' || c == '_' || c == '-'; }

void Loader::add(std::string_view path, std::string_view what) {
  problems_.push_back(prefix_ + std::string(path) + ": " + std::string(what));
}

bool Loader::expect(const Json& value, Json::value_t type, std::string_view phrase,
                    std::string_view path) {
  if (value.type() == type) return true;
  add(path, "expected " + std::string(phrase) + ", got " + std::string(type_phrase(value)));
  return false;
}
bool Loader::expect_object(const Json& value, std::string_view path) {
  return expect(value, Json::value_t::object, "an object", path);
}
bool Loader::expect_array(const Json& value, std::string_view path) {
  return expect(value, Json::value_t::array, "an array", path);
}

void Loader::unknown_key(std::string_view parent, std::string_view key,
                         std::span<const std::string_view> known) {
  std::optional<std::string_view> best;
  std::size_t best_distance = kMaxSuggestionDistance + 1;
  for (const std::string_view candidate : known) {
    const std::size_t distance = edit_distance(key, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  if (best) {
    add(child_path(parent, key), "unknown key (did you mean \"" + std::string(*best) + "\"?)");
    return;
  }
  std::string list;
  for (const std::string_view candidate : known) {
    list += (list.empty() ? "" : ", ") + std::string(candidate);
  }
  add(child_path(parent, key), "unknown key (known keys: " + list + ")");
}

std::optional<Expanded> Loader::read_string(const Json& value, std::string_view path) {
  if (!expect(value, Json::value_t::string, "a string", path)) return std::nullopt;
  return detail::expand(value.get_ref<const std::string&>(), prefix_ + std::string(path), env_,
                        problems_);
}

// A string that must not be empty once expanded.
std::optional<Expanded> Loader::read_required_string(const Json& value, std::string_view path) {
  std::optional<Expanded> text = read_string(value, path);
  if (text && text->value.empty()) {
    add(path, text->from_environment ? "is empty after environment variable expansion"
                                     : "must not be empty");
    return std::nullopt;
  }
  return text;
}

// `path_hint` is added to a "must not contain a path" problem: where a path goes instead.
std::optional<std::string> Loader::read_origin(const Json& value, std::string_view path,
                                               std::string_view path_hint) {
  const std::optional<Expanded> text = read_required_string(value, path);
  if (!text) return std::nullopt;
  OriginCheck check = normalise_origin(text->value);
  if (!check.problem.empty()) {
    // Never the value: it may have come from the environment.
    const bool is_path = check.problem == describe(net::OriginError::path);
    add(path, is_path ? check.problem + std::string(path_hint) : check.problem);
    return std::nullopt;
  }
  return std::move(check.origin);
}

// A path to a regular, readable file, resolved against the config file's directory.
std::optional<fs::path> Loader::load_file_path(const Json& value, std::string_view key) {
  const std::optional<Expanded> text = read_required_string(value, key);
  if (!text) return std::nullopt;
  if (text->value.starts_with("http://") || text->value.starts_with("https://")) {
    add(key, "must be a local file; URLs are not fetched (download it and name the file)");
    return std::nullopt;
  }
  std::error_code error;
  fs::path path = fs::absolute(base_dir_ / fs::path(text->value), error).lexically_normal();
  // A path written in the file is shown (quoted if it holds control characters, so the
  // problem stays one line); one that came from the environment is not.
  const std::string shown = text->from_environment ? "the file" : printable(path.string());
  if (error) {
    add(key, "cannot read " + shown + ": " + error.message());
    return std::nullopt;
  }
  const fs::file_status status = fs::status(path, error);
  if (error || !fs::exists(status)) {
    add(key, "cannot read " + shown + ": " +
                 (error ? error.message()
                        : std::make_error_code(std::errc::no_such_file_or_directory).message()));
    return std::nullopt;
  }
  if (!fs::is_regular_file(status)) {
    add(key, shown + " is not a regular file");
    return std::nullopt;
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  if (!file) {
    add(key,
        "cannot read " + shown + ": " + std::error_code(errno, std::generic_category()).message());
    return std::nullopt;
  }
  return path;
}

// An integer in the JSON (not a float, not a string) within `range`.
std::optional<std::uint32_t> Loader::read_integer(const Json& field, const std::string& path,
                                                  Range range) {
  if (!field.is_number_integer()) {
    add(path, "expected an integer, got " + std::string(type_phrase(field)));
    return std::nullopt;
  }
  const std::string out_of_range =
      " is out of range " + std::to_string(range.min) + ".." + std::to_string(range.max);
  if (!field.is_number_unsigned()) {  // nlohmann stores only negative integers as signed
    add(path, std::to_string(field.get<std::int64_t>()) + out_of_range);
    return std::nullopt;
  }
  const auto number = field.get<std::uint64_t>();
  if (number < range.min || number > range.max) {
    add(path, std::to_string(number) + out_of_range);
    return std::nullopt;
  }
  return static_cast<std::uint32_t>(number);
}

// read_integer into a setting, left as it was when the value is refused.
void Loader::read_u32(const Json& field, const std::string& path, Range range,
                      std::uint32_t& setting) {
  if (auto n = read_integer(field, path, range)) setting = *n;
}

}  // namespace codemode::config::detail
