#include "auth/token_verifier.h"

#include <algorithm>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include "auth/oauth_client.h"
#include "gateway/url_policy.h"

namespace codemode::auth {
namespace {

namespace asio = boost::asio;
using Json = nlohmann::json;

constexpr std::chrono::seconds kFetchTimeout{10};
constexpr std::chrono::seconds kRetryAfterFailure{30};

}  // namespace

std::variant<std::shared_ptr<TokenVerifier>, std::vector<std::string>> TokenVerifier::create(
    asio::io_context& io, const config::OAuth& settings,
    const std::optional<std::filesystem::path>& ca_file) {
  auto client = authorization_server_client(io, ca_file, 1);
  if (auto* problems = std::get_if<std::vector<std::string>>(&client)) return std::move(*problems);
  std::shared_ptr<Introspector> introspector;
  if (settings.introspection) {
    auto created = Introspector::create(io, settings, ca_file);
    if (auto* problems = std::get_if<std::vector<std::string>>(&created)) {
      return std::move(*problems);
    }
    introspector = std::move(std::get<std::shared_ptr<Introspector>>(created));
  }
  return std::shared_ptr<TokenVerifier>(new TokenVerifier(
      io, settings, std::move(std::get<std::unique_ptr<gateway::HttpClient>>(client)),
      std::move(introspector)));
}

TokenVerifier::TokenVerifier(asio::io_context& io, const config::OAuth& settings,
                             std::unique_ptr<gateway::HttpClient> client,
                             std::shared_ptr<Introspector> introspector)
    : strand_(asio::make_strand(io)),
      timer_(strand_),
      settings_(settings),
      expect_{settings.issuer, settings.resource, std::chrono::seconds(settings.leeway_s),
              settings.require_typ_at_jwt ? TokenTyp::at_jwt : TokenTyp::at_jwt_or_jwt},
      client_(std::move(client)),
      introspector_(std::move(introspector)),
      introspection_endpoint_(settings.introspection ? settings.introspection->endpoint : "") {}

void TokenVerifier::start() {
  asio::post(strand_, [self = shared_from_this()] { self->refresh(); });
}

void TokenVerifier::stop() {
  asio::post(strand_, [self = shared_from_this()] {
    self->stopped_ = true;
    self->timer_.cancel();
    if (self->introspector_) self->introspector_->stop();
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
    if (self->is_opaque(token)) {
      // An opaque token waits only for discovery to name the introspection endpoint.
      wait = may_fetch && self->introspection_endpoint_.empty() && self->jwks_uri_.empty();
    } else if (self->keys_) {
      // Only a token that names a kid the set lacks may wait for a fetch; one that is malformed
      // or names a known kid is decided now.
      const auto header = peek_header(token);
      wait = may_fetch && header && !header->kid.empty() && !self->keys_->find_by_kid(header->kid);
    }
    if (!wait) return self->check_now(std::move(token), done);
    if (self->waiting_.size() >= kMaxWaiting) {
      return done(VerifierRefusal{503, "unavailable: too many tokens wait for the issuer's keys"});
    }
    self->waiting_.push_back(Waiting{std::move(token), std::move(done)});
    self->refresh();
  });
}

bool TokenVerifier::is_opaque(const std::string& token) const {
  return introspector_ && std::count(token.begin(), token.end(), '.') != 2;
}

void TokenVerifier::check_now(std::string token, const Done& done) {
  if (is_opaque(token)) {
    // What is sent on to the issuer is a bearer token by RFC 6750's syntax; anything else is
    // refused here, unsent.
    if (!is_b64token(token, kMaxTokenBytes)) {
      return done(VerifierRefusal{401,
                                  "invalid_token: the token is neither a JWT nor a bearer "
                                  "token (RFC 6750 syntax, at most 8 KiB)"});
    }
    if (introspection_endpoint_.empty()) {
      return done(
          VerifierRefusal{503, "unavailable: the issuer's introspection endpoint is not known"});
    }
    return introspector_->introspect(std::move(token), introspection_endpoint_, done);
  }
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
      auto read = read_issuer_metadata(*fetched.body, urls[candidate], self->settings_.issuer);
      if (auto* why = std::get_if<std::string>(&read)) {
        problem = std::move(*why);
      } else if (const auto jwks_uri = metadata_endpoint(std::get<Json>(read), "jwks_uri");
                 !jwks_uri) {
        problem = urls[candidate] + ": no jwks_uri, or not an https URL (http only on loopback)";
      } else {
        self->jwks_uri_ = *jwks_uri;
        spdlog::info("oauth: issuer {} publishes its keys at {}", self->settings_.issuer,
                     self->jwks_uri_);
        if (self->introspector_ && self->introspection_endpoint_.empty()) {
          if (auto endpoint = metadata_endpoint(std::get<Json>(read), "introspection_endpoint")) {
            self->introspection_endpoint_ = std::move(*endpoint);
            spdlog::info("oauth: opaque tokens are introspected at {}",
                         self->introspection_endpoint_);
          } else {
            spdlog::warn(
                "oauth: the issuer's metadata names no usable introspection_endpoint: "
                "opaque tokens get 503 (set http.oauth.introspection.endpoint)");
          }
        }
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
  for (Waiting& waiting : std::exchange(waiting_, {})) {
    check_now(std::move(waiting.token), waiting.done);
  }
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
