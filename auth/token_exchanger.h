// Downstream tokens for upstreams, got from the authorization server in exchange for callers'
// access tokens (OAuth 2.0 Token Exchange, RFC 8693), cached, so each principal's requests to an
// upstream carry a token issued for that upstream, and never the caller's own.
//
// exchange() answers from the cache when it holds a token for the same subject token, upstream
// and settings that is still good (one principal's tokens may grant different scopes, and the
// authorization server's policy decides per token): until its `expires_in` less the leeway
// (http.oauth.leeway_s), and never past the caller's own token's `exp`. Otherwise it POSTs to the
// token endpoint (configured, or the issuer's metadata `token_endpoint`, found once) with
// grant_type token-exchange, the caller's token as `subject_token`, the settings' `audience`,
// `resource` and `scope`, and this server's client credentials (HTTP Basic). Callers asking for the
// same key while its exchange runs share it: one request however many fetches wait. At most
// kMaxPending keys exchange at once (more fail at once), at most kMaxCached tokens are cached (the
// oldest goes).
//
// A failure is a message for the fetch that waited (no token text, no answer body: the status
// and, when it is a plain OAuth error code, the `error`); it is not cached, so the next fetch
// tries again.
//
// Threading: all state lives on one strand of the daemon's io_context; exchange() may be called
// from any thread and `done` runs on that strand, exactly once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include "auth/oauth_client.h"
#include "config/config.h"
#include "gateway/http_client.h"

namespace codemode::auth {

class TokenExchanger : public std::enable_shared_from_this<TokenExchanger> {
 public:
  struct Exchanged {
    std::string token;  // the downstream access token; never logged
  };
  struct Failed {
    std::string message;  // "the authorization server refused the exchange (400 invalid_target)"
  };
  using Result = std::variant<Exchanged, Failed>;
  using Done = std::function<void(Result)>;

  static constexpr std::size_t kMaxPending = 256;
  static constexpr std::size_t kMaxCached = 10000;

  // Start-up problems (an unreadable CA file) as lines.
  static std::variant<std::shared_ptr<TokenExchanger>, std::vector<std::string>> create(
      boost::asio::io_context& io, const config::OAuth& oauth,
      const std::optional<std::filesystem::path>& ca_file);

  // A token for `settings` in exchange for `subject_token` (the caller's access token, which
  // expires at `subject_expires_at`, seconds since the epoch). `key` names which subject token for
  // which upstream ("sha256:HEX origin", never the token itself); the settings are added to it.
  void exchange(const config::TokenExchange& settings, const std::string& key,
                std::string subject_token, std::int64_t subject_expires_at, Done done);

  // Exchange requests sent so far (tests: the cache spared one, or did not).
  std::uint64_t requests() const { return requests_.load(); }

 private:
  TokenExchanger(boost::asio::io_context& io, const config::OAuth& oauth,
                 std::unique_ptr<gateway::HttpClient> client);

  struct Job {
    std::string key;
    config::TokenExchange settings;
    std::string subject_token;
    std::int64_t subject_expires_at = 0;
  };
  struct Cached {
    std::string token;
    std::chrono::steady_clock::time_point until;
    std::uint64_t sequence = 0;
  };

  void start(Job job, const std::string& endpoint);
  void discover(std::size_t candidate);
  void discovered(const std::string& problem);
  void answered(const Job& job, const FormResult& result);
  void finish(const std::string& key, const Result& result);

  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  std::string issuer_;
  std::chrono::seconds leeway_;
  std::unique_ptr<gateway::HttpClient> client_;
  std::string token_endpoint_;  // from the issuer's metadata; empty until found
  bool discovering_ = false;
  std::optional<std::chrono::steady_clock::time_point> last_discovery_failed_;
  std::vector<Job> need_endpoint_;                              // waiting for discovery
  std::unordered_map<std::string, std::vector<Done>> pending_;  // by key
  std::unordered_map<std::string, Cached> cache_;
  std::deque<std::pair<std::string, std::uint64_t>> cache_order_;  // oldest first
  std::uint64_t sequence_ = 0;
  std::atomic<std::uint64_t> requests_{0};
};

}  // namespace codemode::auth
