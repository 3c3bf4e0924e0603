#include "auth/token_verifier.h"

#include <algorithm>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include "gateway/url_policy.h"

namespace codemode::auth {
namespace {

namespace asio = boost::asio;
using Json = nlohmann::json;

constexpr std::chrono::seconds kFetchTimeout{10};
constexpr std::chrono::seconds kRetryAfterFailure{30};

// The places RFC 8414 §3.1 and OpenID Connect Discovery §4 put an issuer's metadata: for
// https://as.example/tenant, https://as.example/.well-known/oauth-authorization-server/tenant
// and https://as.example/tenant/.well-known/openid-configuration.
std::vector<std::string> metadata_urls(const std::string& issuer) {
  const std::size_t authority_end = issuer.find('/', issuer.find("://") + 3);
  const std::string origin = issuer.substr(0, authority_end);
  std::string path = authority_end == std::string::npos ? "" : issuer.substr(authority_end);
  while (!path.empty() && path.back() == '/') path.pop_back();
  return {origin + "/.well-known/oauth-authorization-server" + path,
          origin + path + "/.well-known/openid-configuration"};
}

}  // namespace

std::variant<std::shared_ptr<TokenVerifier>, std::vector<std::string>> TokenVerifier::create(
    asio::io_context& io, const config::OAuth& settings,
    const std::optional<std::filesystem::path>& ca_file) {
  gateway::ClientOptions options;
  options.ca_file = ca_file;
  options.max_idle_per_origin = 1;
  auto client = gateway::HttpClient::create(io, options);
  if (auto* problems = std::get_if<std::vector<std::string>>(&client)) return std::move(*problems);
  return std::shared_ptr<TokenVerifier>(new TokenVerifier(
      io, settings, std::move(std::get<std::unique_ptr<gateway::HttpClient>>(client))));
}

TokenVerifier::TokenVerifier(asio::io_context& io, const config::OAuth& settings,
                             std::unique_ptr<gateway::HttpClient> client)
    : strand_(asio::make_strand(io)),
      timer_(strand_),
      settings_(settings),
      expect_{settings.issuer, settings.resource, std::chrono::seconds(settings.leeway_s)},
      client_(std::move(client)) {}

void TokenVerifier::start() {
  asio::post(strand_, [self = shared_from_this()] { self->refresh(); });
}

void TokenVerifier::stop() {
  asio::post(strand_, [self = shared_from_this()] {
    self->stopped_ = true;
    self->timer_.cancel();
    for (Waiting& waiting : std::exchange(self->waiting_, {})) {
      waiting.done(VerifierRefusal{503, "unavailable: the server is shutting down"});
    }
  });
}

void TokenVerifier::verify(std::string token, Done done) {
  asio::post(strand_, [self = shared_from_this(), token = std::move(token),
                       done = std::move(done)]() mutable {
    if (self->stopped_) {
      return done(VerifierRefusal{503, "unavailable: the server is shutting down"});
    }
    // A fetch may start (or be joined) at most once per jwks_min_interval_s, whatever tokens
    // come: neither made-up kids nor an unreachable issuer turn requests into fetches.
    const auto now = std::chrono::steady_clock::now();
    const bool may_fetch = self->fetching_ || !self->last_fetch_started_ ||
                           now - *self->last_fetch_started_ >=
                               std::chrono::seconds(self->settings_.jwks_min_interval_s);
    bool wait = may_fetch;
    if (self->keys_) {
      // Only a token that names a kid the set lacks may wait for a fetch; one that is malformed
      // or names a known kid is decided now.
      const auto header = peek_header(token);
      wait = may_fetch && header && !header->kid.empty() && !self->keys_->find_by_kid(header->kid);
    }
    if (!wait) return self->check_now(token, done);
    if (self->waiting_.size() >= kMaxWaiting) {
      return done(VerifierRefusal{503, "unavailable: too many tokens wait for the issuer's keys"});
    }
    self->waiting_.push_back(Waiting{std::move(token), std::move(done)});
    self->refresh();
  });
}

void TokenVerifier::check_now(const std::string& token, const Done& done) {
  if (!keys_) {
    return done(VerifierRefusal{503, "unavailable: the issuer's keys could not be fetched"});
  }
  Verification result =
      verify_access_token(token, *keys_, expect_, std::chrono::system_clock::now());
  if (auto* refusal = std::get_if<TokenRefusal>(&result)) {
    return done(VerifierRefusal{401, std::move(refusal->message)});
  }
  done(std::move(std::get<VerifiedToken>(result)));
}

void TokenVerifier::refresh() {
  if (fetching_ || stopped_) return;
  fetching_ = true;
  last_fetch_started_ = std::chrono::steady_clock::now();
  if (jwks_uri_.empty()) return discover(0);
  fetch_keys();
}

void TokenVerifier::discover(std::size_t candidate) {
  const std::vector<std::string> urls = metadata_urls(settings_.issuer);
  get(urls[candidate], [self = shared_from_this(), candidate, urls](Fetched fetched) {
    std::string problem = fetched.error;
    if (fetched.body) {
      const Json metadata = Json::parse(*fetched.body, nullptr, false);
      const auto issuer = metadata.is_object() ? metadata.find("issuer") : metadata.end();
      const auto jwks_uri = metadata.is_object() ? metadata.find("jwks_uri") : metadata.end();
      if (!metadata.is_object()) {
        problem = urls[candidate] + " is not a JSON object";
      } else if (issuer == metadata.end() || !issuer->is_string() ||
                 issuer->get_ref<const std::string&>() != self->settings_.issuer) {
        // RFC 8414 §3.3: metadata naming another issuer must not be used.
        problem = urls[candidate] + " names another issuer";
      } else if (jwks_uri == metadata.end() || !jwks_uri->is_string()) {
        problem = urls[candidate] + " has no jwks_uri";
      } else if (auto url = gateway::normalise_url(jwks_uri->get<std::string>(), "");
                 std::holds_alternative<std::string>(url) ||
                 !config::is_acceptable_oauth_url(std::get<gateway::NormalisedUrl>(url).full())) {
        problem = urls[candidate] + ": jwks_uri must be an https URL (http only on loopback)";
      } else {
        self->jwks_uri_ = std::get<gateway::NormalisedUrl>(url).full();
        spdlog::info("oauth: issuer {} publishes its keys at {}", self->settings_.issuer,
                     self->jwks_uri_);
        return self->fetch_keys();
      }
    }
    if (candidate + 1 < urls.size()) {
      spdlog::debug("oauth: {}", problem);
      return self->discover(candidate + 1);
    }
    self->fetched(std::string("no metadata for the issuer: ") + problem);
  });
}

void TokenVerifier::fetch_keys() {
  get(jwks_uri_, [self = shared_from_this()](Fetched fetched) {
    if (!fetched.body) return self->fetched(std::move(fetched.error));
    auto read = KeySet::from_jwks(*fetched.body);
    if (auto* problem = std::get_if<std::string>(&read)) {
      return self->fetched(self->jwks_uri_ + ": " + *problem);
    }
    auto& keys = std::get<KeySet::Read>(read);
    for (const std::string& skipped : keys.skipped) spdlog::debug("oauth: JWKS {}", skipped);
    self->fetched(std::move(keys.keys));
  });
}

void TokenVerifier::fetched(std::variant<KeySet, std::string> result) {
  fetching_ = false;
  if (auto* problem = std::get_if<std::string>(&result)) {
    spdlog::warn("oauth: the issuer's keys could not be fetched: {}", *problem);
    schedule(std::min(kRetryAfterFailure, std::chrono::seconds(settings_.jwks_refresh_s)));
  } else {
    auto keys = std::make_shared<const KeySet>(std::move(std::get<KeySet>(result)));
    spdlog::info("oauth: {} signing key(s) from {}", keys->size(), jwks_uri_);
    keys_ = std::move(keys);
    ++fetches_;
    schedule(std::chrono::seconds(settings_.jwks_refresh_s));
  }
  for (Waiting& waiting : std::exchange(waiting_, {})) check_now(waiting.token, waiting.done);
}

void TokenVerifier::schedule(std::chrono::seconds after) {
  if (stopped_) return;
  timer_.expires_after(after);
  timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    auto self = weak.lock();
    if (ec || !self) return;
    self->refresh();
  });
}

void TokenVerifier::get(const std::string& url, std::function<void(Fetched)> then) {
  auto normalised = gateway::normalise_url(url, "");
  if (auto* problem = std::get_if<std::string>(&normalised)) {
    return then(Fetched{std::nullopt, url + ": " + *problem});
  }
  gateway::ClientRequest request;
  request.url = std::get<gateway::NormalisedUrl>(normalised);
  request.headers.emplace_back("Accept", "application/json");
  client_->send(std::move(request), gateway::Clock::now() + kFetchTimeout,
                [self = shared_from_this(), url,
                 then = std::move(then)](gateway::ClientResult result) mutable {
                  Fetched fetched;
                  if (auto* error = std::get_if<gateway::GatewayError>(&result)) {
                    fetched.error = error->message;
                  } else if (auto& response = std::get<gateway::InboundResponse>(result);
                             response.status != 200) {
                    fetched.error = url + " answered " + std::to_string(response.status);
                  } else {
                    fetched.body = std::move(response.body);
                  }
                  asio::post(self->strand_,
                             [then = std::move(then), fetched = std::move(fetched)]() mutable {
                               then(std::move(fetched));
                             });
                });
}

}  // namespace codemode::auth
