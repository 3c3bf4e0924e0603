// The policy of execute's requests (top level, or a principal's own), its approval rules, and
// the principals section that gives a principal its own headers and policy.
#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/loader.h"
#include "net/ascii.h"

namespace codemode::config::detail {
namespace {

constexpr std::size_t kMaxPrincipalNameChars = Config::kMaxPrincipalChars;

constexpr std::array<std::string_view, 2> kPrincipalKeys = {"upstreams", "policy"};
constexpr std::array<std::string_view, 5> kPolicyKeys = {"operations", "methods", "approve",
                                                         "approval_timeout_ms", "approval_key"};
constexpr std::array<std::string_view, 4> kApproveKeys = {"methods", "operations", "tags", "paths"};
constexpr std::array<std::string_view, 6> kMethods = {"GET", "HEAD",  "POST",
                                                      "PUT", "PATCH", "DELETE"};

// A token's name, or the principal an OAuth access token names ("sub:<subject>",
// "client:<client id>", "sub-sha256:<hex>", "client-sha256:<hex>": auth/access_token.h).
bool is_principal_name(std::string_view name) {
  return !name.empty() && name.size() <= kMaxPrincipalNameChars &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return is_name_char(c) || c == '@' || c == ':' || c == '+' || c == '=' || c == '|';
         });
}

}  // namespace

void Loader::load_policy(const Json& value, Policy& policy, const std::string& where) {
  if (!expect_object(value, where)) return;
  for (const auto& [key, field] : value.items()) {
    const std::string path = child_path(where, key);
    if (key == "operations") {
      const std::optional<Expanded> text = read_required_string(field, path);
      if (!text) continue;
      if (text->value == "any") {
        policy.operations = Policy::Operations::any;
      } else if (text->value == "spec") {
        policy.operations = Policy::Operations::spec;
      } else {
        add(path, "must be \"any\" or \"spec\"");
      }
    } else if (key == "methods") {
      if (!expect_array(field, path)) continue;
      if (field.empty()) add(path, "must name at least one method (omit it to allow all)");
      read_methods(field, path, policy.methods);
    } else if (key == "approve" && where == "policy") {
      load_approval(field, policy.approve, path);
    } else if (key == "approval_timeout_ms" && where == "policy") {
      read_u32(field, path, Policy::kApprovalTimeoutMsRange, policy.approval_timeout_ms);
    } else if (key == "approval_key" && where == "policy") {
      const std::optional<Expanded> text = read_required_string(field, path);
      if (!text) continue;
      const bool hex = text->value.size() == 64 &&
                       std::all_of(text->value.begin(), text->value.end(), net::is_hex_digit);
      if (!hex) {
        add(path, "must be 64 hex digits (a 256-bit key: openssl rand -hex 32)");
        continue;
      }
      policy.approval_key = text->value;
    } else if (key == "approve" || key == "approval_timeout_ms" || key == "approval_key") {
      add(path, "approval is set for every principal at once, in the top-level policy");
    } else {
      unknown_key(where, key, kPolicyKeys);
    }
  }
}

// Upper-cased methods of `field` (an array) appended to `methods`, each once.
void Loader::read_methods(const Json& field, const std::string& path,
                          std::vector<std::string>& methods) {
  for (std::size_t i = 0; i < field.size(); ++i) {
    const std::optional<Expanded> text = read_required_string(field[i], element_path(path, i));
    if (!text) continue;
    std::string method = net::upper(text->value);
    if (std::find(kMethods.begin(), kMethods.end(), method) == kMethods.end()) {
      add(element_path(path, i), "must be one of GET, HEAD, POST, PUT, PATCH, DELETE");
    } else if (std::find(methods.begin(), methods.end(), method) == methods.end()) {
      methods.push_back(std::move(method));
    }
  }
}

// `policy.approve`: true (writes), false (none), or an object narrowing it.
void Loader::load_approval(const Json& value, std::optional<Approval>& approval,
                           const std::string& where) {
  if (value.is_boolean()) {
    if (value.get<bool>()) approval.emplace();
    return;
  }
  if (!value.is_object()) {
    add(where, "must be true, false or an object (methods, operations, tags, paths)");
    return;
  }
  Approval& rules = approval.emplace();
  for (const auto& [key, field] : value.items()) {
    const std::string path = child_path(where, key);
    if (key != "methods" && key != "operations" && key != "tags" && key != "paths") {
      unknown_key(where, key, kApproveKeys);
      continue;
    }
    if (!expect_array(field, path)) continue;
    if (field.empty()) add(path, "must name at least one (omit it for the default)");
    if (key == "methods") {
      rules.methods.clear();
      read_methods(field, path, rules.methods);
      continue;
    }
    auto& list = key == "operations" ? rules.operations : key == "tags" ? rules.tags : rules.paths;
    for (std::size_t i = 0; i < field.size(); ++i) {
      const std::optional<Expanded> text = read_required_string(field[i], element_path(path, i));
      if (!text) continue;
      if (key == "paths" && (text->value.empty() || text->value.front() != '/')) {
        add(element_path(path, i), "must be a path pattern starting with /");
        continue;
      }
      list.push_back(text->value);
    }
  }
}

void Loader::load_principals(const Json& value,
                             std::map<std::string, PrincipalSettings>& principals) {
  if (!expect_object(value, "principals")) return;
  for (const auto& [name, entry] : value.items()) {
    const std::string path = child_path("principals", name);
    if (!is_principal_name(name)) {
      add("principals",
          "a principal is a token's name or what an access token names (sub:SUBJECT, "
          "client:ID): 1 to " +
              std::to_string(kMaxPrincipalNameChars) + " characters of A-Z, a-z, 0-9 and ._-@:+=|");
      continue;
    }
    if (!expect_object(entry, path)) continue;
    PrincipalSettings settings;
    for (const auto& [key, field] : entry.items()) {
      if (key == "upstreams") {
        load_upstreams(field, settings.upstreams, child_path(path, key));
      } else if (key == "policy") {
        load_policy(field, settings.policy.emplace(), child_path(path, key));
      } else {
        unknown_key(path, key, kPrincipalKeys);
      }
    }
    principals.emplace(name, std::move(settings));
  }
}

// A principal's headers are for an origin the top-level upstreams allow: never a way to widen
// the allowlist.
void Loader::check_principal_origins(const Api& api) {
  for (const auto& [name, settings] : api.principals) {
    for (std::size_t i = 0; i < settings.upstreams.size(); ++i) {
      const std::string& origin = settings.upstreams[i].origin;
      if (origin.empty()) continue;  // already a problem
      const bool known = std::any_of(api.upstreams.begin(), api.upstreams.end(),
                                     [&](const Upstream& u) { return u.origin == origin; });
      if (!known) {
        add(child_path(element_path(child_path(child_path("principals", name), "upstreams"), i),
                       "origin"),
            "not one of the top-level upstreams (a principal's entry gives headers for a "
            "configured origin; it does not add one)");
      }
    }
  }
}

}  // namespace codemode::config::detail
