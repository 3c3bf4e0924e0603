// The http section: the Origins allowed to call /mcp, and the bearer tokens with their
// principals' names from `http.tokens` and `http.bearer_tokens`, checked across both lists.
// (http.oauth: load_oauth.cpp.)
#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/loader.h"
#include "net/ascii.h"

namespace codemode::config::detail {
namespace {

constexpr std::size_t kMinBearerTokenChars = BearerToken::kMinTokenChars;
constexpr std::size_t kMaxTokenNameChars = BearerToken::kMaxNameChars;

using net::lower;

constexpr std::array<std::string_view, 4> kHttpKeys = {"allowed_origins", "tokens", "bearer_tokens",
                                                       "oauth"};
constexpr std::array<std::string_view, 2> kTokenKeys = {"name", "token"};

// The name of a `bearer_tokens` entry: config.h promises token-1, token-2, ... by position.
std::string generated_token_name(std::size_t index) { return "token-" + std::to_string(index + 1); }

}  // namespace

void Loader::load_http(const Json& value, Http& http) {
  if (!expect_object(value, "http")) return;
  std::vector<TokenEntry> named;
  std::vector<TokenEntry> plain;
  for (const auto& [key, field] : value.items()) {
    const std::string path = child_path("http", key);
    if (key == "allowed_origins") {
      if (!expect_array(field, path)) continue;
      http.allowed_origins.clear();
      for (std::size_t i = 0; i < field.size(); ++i) {
        if (auto origin = read_origin(field[i], element_path(path, i))) {
          http.allowed_origins.push_back(std::move(*origin));
        }
      }
    } else if (key == "tokens") {
      load_named_tokens(field, path, named);
    } else if (key == "oauth") {
      http.oauth = load_oauth(field, path);
    } else if (key == "bearer_tokens") {
      if (!expect_array(field, path)) continue;
      for (std::size_t i = 0; i < field.size(); ++i) {
        const std::string token_path = element_path(path, i);
        plain.push_back(TokenEntry{generated_token_name(i), read_bearer_token(field[i], token_path),
                                   "", token_path});
      }
    } else {
      unknown_key("http", key, kHttpKeys);
    }
  }
  check_token_entries(named, plain);
  for (std::vector<TokenEntry>* entries : {&named, &plain}) {
    for (TokenEntry& entry : *entries) {
      if (entry.name && entry.token) {
        http.bearer_tokens.push_back(BearerToken{std::move(*entry.name), std::move(*entry.token)});
      }
    }
  }
}

void Loader::load_named_tokens(const Json& value, const std::string& path,
                               std::vector<TokenEntry>& entries) {
  if (!expect_array(value, path)) return;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string entry_path = element_path(path, i);
    const Json& item = value[i];
    if (!expect_object(item, entry_path)) continue;
    TokenEntry entry;
    entry.name_path = child_path(entry_path, "name");
    entry.token_path = child_path(entry_path, "token");
    bool saw_name = false;
    bool saw_token = false;
    for (const auto& [key, field] : item.items()) {
      if (key == "name") {
        saw_name = true;
        entry.name = read_token_name(field, entry.name_path);
      } else if (key == "token") {
        saw_token = true;
        entry.token = read_bearer_token(field, entry.token_path);
      } else {
        unknown_key(entry_path, key, kTokenKeys);
      }
    }
    if (!saw_name) add(entry.name_path, "required key is missing");
    if (!saw_token) add(entry.token_path, "required key is missing");
    entries.push_back(std::move(entry));
  }
}

// Names appear in logs, metrics and audit records: a small alphabet keeps them safe there
// unquoted. A problem never shows the name, which may have come from the environment.
std::optional<std::string> Loader::read_token_name(const Json& value, const std::string& path) {
  std::optional<Expanded> text = read_required_string(value, path);
  if (!text) return std::nullopt;
  const std::string& name = text->value;
  const bool allowed = std::all_of(name.begin(), name.end(), is_name_char);
  if (!allowed) {
    add(path, "may contain only ASCII letters, digits, '.', '_' and '-'");
    return std::nullopt;
  }
  if (name.size() > kMaxTokenNameChars) {
    add(path, "longer than " + std::to_string(kMaxTokenNameChars) + " characters");
    return std::nullopt;
  }
  return std::move(text->value);
}

// Across both lists: a name names one principal (ignoring case), and a token stands for one
// principal. Problems name where the other one was written, never a token.
void Loader::check_token_entries(const std::vector<TokenEntry>& named,
                                 const std::vector<TokenEntry>& plain) {
  std::map<std::string, const TokenEntry*> generated;  // generated names are lower-case
  for (const TokenEntry& entry : plain) generated.emplace(*entry.name, &entry);
  std::map<std::string, const TokenEntry*> given;  // lower-case name -> first entry with it
  for (const TokenEntry& entry : named) {
    if (!entry.name) continue;
    const std::string key = lower(*entry.name);
    // A clash with a generated name is reported at the given one: that is the name the author
    // chose and can change.
    if (key == kStdioPrincipal) {
      // The stdio client's principal: a token of that name would share its sandbox
      // processes, memory share, turns and audit name with whoever holds stdin.
      add(entry.name_path, "\"stdio\" is the stdio client's principal; choose another name");
    } else if (const auto it = generated.find(key); it != generated.end()) {
      add(entry.name_path, "\"" + it->first + "\" is the name of " + it->second->token_path +
                               " (entries of http.bearer_tokens are named token-1, token-2, "
                               "... in file order); choose another");
    } else if (const auto [first, inserted] = given.emplace(key, &entry); !inserted) {
      add(entry.name_path,
          "same name as " + first->second->name_path + " (names are unique, ignoring case)");
    }
  }
  std::map<std::string, const TokenEntry*> by_token;
  for (const std::vector<TokenEntry>* entries : {&named, &plain}) {
    for (const TokenEntry& entry : *entries) {
      if (!entry.token) continue;
      if (const auto [first, inserted] = by_token.emplace(*entry.token, &entry); !inserted) {
        add(entry.token_path,
            "same token as " + first->second->token_path + " (a token stands for one principal)");
      }
    }
  }
}

std::optional<std::string> Loader::read_bearer_token(const Json& value, const std::string& path) {
  std::optional<Expanded> text = read_required_string(value, path);
  if (!text) return std::nullopt;
  const std::string& token = text->value;
  const auto is_whitespace = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  };
  if (std::any_of(token.begin(), token.end(), is_whitespace)) {
    add(path, "contains whitespace");
    return std::nullopt;
  }
  const bool visible_ascii = std::all_of(token.begin(), token.end(), [](char c) {
    return static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7F;
  });
  if (!visible_ascii) {
    add(path, "may contain only visible ASCII characters");
    return std::nullopt;
  }
  if (token.size() < kMinBearerTokenChars) {
    add(path, "shorter than " + std::to_string(kMinBearerTokenChars) +
                  " characters; short tokens are guessable");
    return std::nullopt;
  }
  return std::move(text->value);
}

}  // namespace codemode::config::detail
