// The issuer's keys kept current, and access tokens checked against them, without ever making
// the I/O thread wait on the network.
//
// start() discovers the issuer's metadata (RFC 8414 `/.well-known/oauth-authorization-server`,
// then OpenID discovery `/.well-known/openid-configuration`; the document's `issuer` must equal
// the configured one) and fetches its `jwks_uri`. The key set is then refreshed every
// `jwks_refresh_s`, and also when a token names a kid the set does not hold, at most once per
// `jwks_min_interval_s` (a stream of made-up kids costs one fetch per interval, not one each).
//
// verify() checks a token against the cached set at once when its key is there (CPU only); a
// token whose kid is unknown while a refresh may run, or that arrives before the first key set,
// waits for that fetch (bounded: kMaxWaiting tokens, then refused) and is checked when it ends.
// So a key rotation at the issuer costs the first token with the new kid one fetch, and no
// token is ever checked against keys older than the fetch it waited for.
//
// With http.oauth.introspection, a token that is not shaped like a JWT (not three dot-separated
// parts) goes to the Introspector instead (auth/introspector.h), at the endpoint configured or
// named by the issuer's metadata (`introspection_endpoint`); before discovery has run, it waits
// for it as a JWT waits for the first key set.
//
// Threading: all state lives on one strand of the daemon's io_context; verify() may be called
// from any thread and `done` runs on that strand, exactly once. The HTTP(S) client is the
// gateway's (gateway/http_client.h), so the trust store (`ca_file`) and deadlines are the same.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "auth/access_token.h"
#include "auth/introspector.h"
#include "auth/jwks.h"
#include "config/config.h"
#include "gateway/http_client.h"

namespace codemode::auth {

class TokenVerifier : public std::enable_shared_from_this<TokenVerifier> {
 public:
  using Done = std::function<void(VerifierResult)>;
  // Tokens waiting for a key fetch at once; more are refused with 503.
  static constexpr std::size_t kMaxWaiting = 1024;

  // Start-up problems (an unreadable CA file) as lines.
  static std::variant<std::shared_ptr<TokenVerifier>, std::vector<std::string>> create(
      boost::asio::io_context& io, const config::OAuth& settings,
      const std::optional<std::filesystem::path>& ca_file);

  // Discovery and the first key fetch, then the periodic refresh. Returns at once.
  void start();
  // Cancels the refresh timer; waiting tokens are refused. Fetches in flight run out.
  void stop();

  void verify(std::string token, Done done);

  // How many key sets have been fetched (tests: a refresh happened, or did not).
  std::uint64_t fetches() const { return fetches_.load(); }

 private:
  TokenVerifier(boost::asio::io_context& io, const config::OAuth& settings,
                std::unique_ptr<gateway::HttpClient> client,
                std::shared_ptr<Introspector> introspector);

  struct Waiting {
    std::string token;
    Done done;
  };

  void check_now(std::string token, const Done& done);
  // Whether `token` is for the introspector: introspection is configured and it is not shaped
  // like a JWT.
  bool is_opaque(const std::string& token) const;
  void refresh();  // starts a fetch unless one is in flight
  void discover(std::size_t candidate);
  void fetch_keys();
  void fetched(std::variant<KeySet, std::string> result);
  void schedule(std::chrono::seconds after);
  // One GET of a JSON document: its body, or why not (a line naming the URL, never a header).
  struct Fetched {
    std::optional<std::string> body;
    std::string error;
  };
  void get(const std::string& url, std::function<void(Fetched)> then);

  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::steady_timer timer_;
  config::OAuth settings_;
  Expectations expect_;
  std::unique_ptr<gateway::HttpClient> client_;
  std::string jwks_uri_;                        // empty until discovery succeeded
  std::shared_ptr<Introspector> introspector_;  // null without http.oauth.introspection
  std::string introspection_endpoint_;          // configured, else from discovery; empty: not known
  std::shared_ptr<const KeySet> keys_;
  bool fetching_ = false;
  bool stopped_ = false;
  std::optional<std::chrono::steady_clock::time_point> last_fetch_started_;
  std::deque<Waiting> waiting_;
  std::atomic<std::uint64_t> fetches_{0};
};

}  // namespace codemode::auth
