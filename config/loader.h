// The schema walk: a Loader reads a parsed config document section by section into a Config,
// adding every problem it finds to one list and carrying on, so that one run reports them all.
// Internal to config/.
//
// The class is declared here and defined by section, one file each: loader.cpp (the shared
// machinery: problems, type checks, strings after `${ENV}` expansion, origins, files, integers
// in a range), load_top.cpp (the top level, limits, sandbox, tracing), load_upstreams.cpp,
// load_policy.cpp (policy, approval, principals), load_http.cpp (origins and tokens),
// load_oauth.cpp (OAuth, introspection, token exchange) and load_audit.cpp.
//
// Thread-safety: one Loader per parse, on the thread that parses; it borrows the base directory,
// the environment and the problem list, all of which outlive it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"
#include "config/expand.h"
#include "config/problem_path.h"

namespace codemode::config::detail {

// A principal's name (a token's `name`, a `principals` key) is made of these and a few more:
// safe unquoted in logs, metrics labels and audit records.
bool is_name_char(char c);

class Loader {
 public:
  Loader(const std::filesystem::path& base_dir, const Environment& env,
         std::vector<std::string>& problems)
      : base_dir_(base_dir), env_(env), problems_(problems) {}

  // Only the "audit" section (load_audit_section).
  Config load_audit_only(const Json& root);
  Config load(const Json& root);

 private:
  // One token as read from either key, with where it was written, for the checks that span both
  // lists. A part that is missing or has a problem (already reported) is nullopt.
  struct TokenEntry {
    std::optional<std::string> name;
    std::optional<std::string> token;
    std::string name_path;   // empty: the name is generated (a `bearer_tokens` entry)
    std::string token_path;  // `http.tokens[0].token` or `http.bearer_tokens[0]`
  };

  // loader.cpp: the shared machinery. Every problem's path starts with `prefix_`.
  void add(std::string_view path, std::string_view what);
  bool expect(const Json& value, Json::value_t type, std::string_view phrase,
              std::string_view path);
  bool expect_object(const Json& value, std::string_view path);
  bool expect_array(const Json& value, std::string_view path);
  void unknown_key(std::string_view parent, std::string_view key,
                   std::span<const std::string_view> known);
  std::optional<Expanded> read_string(const Json& value, std::string_view path);
  std::optional<Expanded> read_required_string(const Json& value, std::string_view path);
  std::optional<std::string> read_origin(const Json& value, std::string_view path,
                                         std::string_view path_hint = {});
  std::optional<std::filesystem::path> load_file_path(const Json& value, std::string_view key);
  std::optional<std::uint32_t> read_integer(const Json& field, const std::string& path,
                                            Range range);
  void read_u32(const Json& field, const std::string& path, Range range, std::uint32_t& setting);

  // load_top.cpp: the APIs, limits, sandbox, tracing.
  void load_apis(const Json& value, Config& config);
  void load_api_key(std::string_view key, const Json& value, Api& api);
  void check_api(const Config& config, const Api& api);
  void load_limits(const Json& value, Limits& limits);
  void load_sandbox(const Json& value, SandboxSettings& sandbox);
  std::optional<Tracing> load_tracing(const Json& value);

  // load_upstreams.cpp.
  void load_upstreams(const Json& value, std::vector<Upstream>& upstreams,
                      const std::string& where = "upstreams");
  void load_query(const Json& value, const std::string& path,
                  std::vector<std::pair<std::string, std::string>>& query);
  bool load_basic(const Json& value, const std::string& path, Upstream& upstream);
  std::optional<std::string> read_base_path(const Json& value, const std::string& path);
  void load_headers(const Json& value, const std::string& path,
                    std::vector<std::pair<std::string, std::string>>& headers);

  // load_policy.cpp: policy, approval, principals.
  void load_policy(const Json& value, Policy& policy, const std::string& where = "policy");
  void read_methods(const Json& field, const std::string& path, std::vector<std::string>& methods);
  void load_approval(const Json& value, std::optional<Approval>& approval,
                     const std::string& where);
  void load_principals(const Json& value, std::map<std::string, PrincipalSettings>& principals);
  void check_principal_origins(const Api& api);

  // load_audit.cpp.
  std::optional<Audit> load_audit(const Json& value);
  std::optional<std::filesystem::path> load_new_file_path(const Json& value, std::string_view path);

  // load_http.cpp: allowed origins and bearer tokens.
  void load_http(const Json& value, Http& http);
  void load_named_tokens(const Json& value, const std::string& path,
                         std::vector<TokenEntry>& entries);
  std::optional<std::string> read_token_name(const Json& value, const std::string& path);
  void check_token_entries(const std::vector<TokenEntry>& named,
                           const std::vector<TokenEntry>& plain);
  std::optional<std::string> read_bearer_token(const Json& value, const std::string& path);

  // load_oauth.cpp: OAuth, introspection, token exchange.
  std::string read_oauth_url(const Json& field, const std::string& field_path);
  std::vector<std::string> read_scope_list(const Json& field, const std::string& field_path);
  std::string read_client_text(const Json& field, const std::string& field_path);
  std::optional<TokenExchange> load_token_exchange(const Json& value, const std::string& path);
  std::optional<Introspection> load_introspection(const Json& value, const std::string& path);
  void check_token_exchanges(const Config& config, const Api& api);
  std::optional<OAuth> load_oauth(const Json& value, const std::string& path);

  const std::filesystem::path& base_dir_;
  const Environment& env_;
  std::vector<std::string>& problems_;
  // Where the section being read sits: "" at the top level, "apis.NAME." inside an API.
  std::string prefix_;
};

}  // namespace codemode::config::detail
