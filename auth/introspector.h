// Opaque access tokens checked at the authorization server (RFC 7662), with the answers cached,
// so the I/O thread never waits on the network and a flood of tokens cannot hammer the issuer.
//
// introspect() looks the token up by its SHA-256 (token_digest: no cache key, map or log line
// ever holds a token): an answer still fresh decides at once. Otherwise the token is POSTed to
// the introspection endpoint with this server's client credentials (HTTP Basic), and the answer
// is held to the rules a JWT's claims are (verify_introspection). An active token's answer is
// reused until the earlier of its `exp` and `cache_s`; an inactive or refused one for
// `inactive_cache_s`, so the same made-up token costs one request per that interval. The cache
// holds at most `cache_entries` answers, the oldest going first.
//
// Bounds: at most `concurrency` requests in flight; the same token presented again while its
// request runs joins it (one request, however many callers); further tokens wait, at most
// kMaxWaiting of them, beyond which they get 503. An introspection that fails (the issuer
// unreachable, a status other than 200, an answer that is not JSON) is 503 and not cached: the
// token may be fine.
//
// Threading: all state lives on one strand of the daemon's io_context; introspect() may be
// called from any thread and `done` runs on that strand, exactly once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include "auth/access_token.h"
#include "auth/oauth_client.h"
#include "config/config.h"
#include "gateway/http_client.h"

namespace codemode::auth {

// A token refused: 401 with `WWW-Authenticate: Bearer error="invalid_token"`, or 503 when the
// issuer's keys or its introspection cannot be had (the token may be fine; the client should
// retry, not sign in).
struct VerifierRefusal {
  unsigned status = 401;
  std::string message;  // "invalid_token: ..." or "unavailable: ..."
};
using VerifierResult = std::variant<VerifiedToken, VerifierRefusal>;

class Introspector : public std::enable_shared_from_this<Introspector> {
 public:
  using Done = std::function<void(VerifierResult)>;
  // Tokens waiting for a free request slot; more are refused with 503.
  static constexpr std::size_t kMaxWaiting = 1024;

  // Start-up problems (an unreadable CA file) as lines. `settings.introspection` must be set.
  static std::variant<std::shared_ptr<Introspector>, std::vector<std::string>> create(
      boost::asio::io_context& io, const config::OAuth& settings,
      const std::optional<std::filesystem::path>& ca_file);

  // `endpoint`: the introspection endpoint (configured, or from the issuer's metadata).
  void introspect(std::string token, std::string endpoint, Done done);
  // Waiting tokens are refused; requests in flight run out.
  void stop();

  // Introspection requests sent so far (tests: the cache spared one, or did not).
  std::uint64_t requests() const { return requests_.load(); }

 private:
  Introspector(boost::asio::io_context& io, const config::OAuth& settings,
               std::unique_ptr<gateway::HttpClient> client);

  struct Cached {
    VerifierResult result;
    std::chrono::steady_clock::time_point until;
    std::uint64_t sequence = 0;
  };
  struct Queued {
    std::string digest;
    std::string token;
    std::string endpoint;
  };

  void start(Queued job);
  void answered(const std::string& digest, const FormResult& result);
  void remember(const std::string& digest, const VerifierResult& result);

  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  config::Introspection settings_;
  Expectations expect_;
  std::string authorization_;  // the Basic credentials; never logged
  std::unique_ptr<gateway::HttpClient> client_;
  std::unordered_map<std::string, Cached> cache_;
  std::deque<std::pair<std::string, std::uint64_t>> cache_order_;  // oldest first
  std::uint64_t sequence_ = 0;
  // By digest: the callers waiting for that token's answer (its request running or queued).
  std::unordered_map<std::string, std::vector<Done>> pending_;
  std::deque<Queued> queue_;
  std::size_t running_ = 0;
  bool stopped_ = false;
  std::atomic<std::uint64_t> requests_{0};
};

}  // namespace codemode::auth
