#include "auth/introspector.h"

#include <algorithm>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

namespace codemode::auth {
namespace {

namespace asio = boost::asio;
using Json = nlohmann::json;

constexpr std::chrono::seconds kRequestTimeout{10};

}  // namespace

std::variant<std::shared_ptr<Introspector>, std::vector<std::string>> Introspector::create(
    asio::io_context& io, const config::OAuth& settings,
    const std::optional<std::filesystem::path>& ca_file) {
  auto client = authorization_server_client(io, ca_file, 4);
  if (auto* problems = std::get_if<std::vector<std::string>>(&client)) return std::move(*problems);
  return std::shared_ptr<Introspector>(new Introspector(
      io, settings, std::move(std::get<std::unique_ptr<gateway::HttpClient>>(client))));
}

Introspector::Introspector(asio::io_context& io, const config::OAuth& settings,
                           std::unique_ptr<gateway::HttpClient> client)
    : strand_(asio::make_strand(io)),
      settings_(settings.introspection.value()),
      expect_{settings.issuer, settings.resource, std::chrono::seconds(settings.leeway_s)},
      authorization_(basic_authorization(settings_.client_id, settings_.client_secret)),
      client_(std::move(client)) {}

void Introspector::introspect(std::string token, std::string endpoint, Done done) {
  asio::post(strand_, [self = shared_from_this(), token = std::move(token),
                       endpoint = std::move(endpoint), done = std::move(done)]() mutable {
    if (self->stopped_) {
      return done(VerifierRefusal{503, "unavailable: the server is shutting down"});
    }
    std::string digest = token_digest(token);
    if (const auto hit = self->cache_.find(digest); hit != self->cache_.end()) {
      if (hit->second.until > std::chrono::steady_clock::now()) return done(hit->second.result);
      self->cache_.erase(hit);
    }
    if (const auto joined = self->pending_.find(digest); joined != self->pending_.end()) {
      joined->second.push_back(std::move(done));
      return;
    }
    Queued job{digest, std::move(token), std::move(endpoint)};
    if (self->running_ < self->settings_.concurrency) {
      self->pending_[digest].push_back(std::move(done));
      return self->start(std::move(job));
    }
    if (self->queue_.size() >= kMaxWaiting) {
      return done(VerifierRefusal{503, "unavailable: too many tokens wait for introspection"});
    }
    self->pending_[digest].push_back(std::move(done));
    self->queue_.push_back(std::move(job));
  });
}

void Introspector::stop() {
  asio::post(strand_, [self = shared_from_this()] {
    self->stopped_ = true;
    for (const Queued& job : std::exchange(self->queue_, {})) {
      for (const Done& done : std::exchange(self->pending_[job.digest], {})) {
        done(VerifierRefusal{503, "unavailable: the server is shutting down"});
      }
      self->pending_.erase(job.digest);
    }
  });
}

void Introspector::start(Queued job) {
  ++running_;
  ++requests_;
  std::string form = form_encode({{"token", job.token}, {"token_type_hint", "access_token"}});
  post_form(*client_, job.endpoint, authorization_, std::move(form),
            gateway::Clock::now() + kRequestTimeout,
            [self = shared_from_this(), digest = job.digest](FormResult result) {
              asio::post(self->strand_, [self, digest, result = std::move(result)] {
                self->answered(digest, result);
              });
            });
}

void Introspector::answered(const std::string& digest, const FormResult& result) {
  --running_;
  VerifierResult decided = VerifierRefusal{503, "unavailable: the token could not be introspected"};
  if (const auto* problem = std::get_if<std::string>(&result)) {
    spdlog::warn("oauth: introspection failed: {}", *problem);
  } else if (const auto& answer = std::get<FormAnswer>(result); answer.status != 200) {
    spdlog::warn("oauth: the introspection endpoint answered {}", answer.status);
  } else if (const Json body = Json::parse(answer.body, nullptr, false); !body.is_object()) {
    spdlog::warn("oauth: the introspection endpoint answered something other than a JSON object");
  } else {
    Verification checked = verify_introspection(body, expect_, std::chrono::system_clock::now());
    if (auto* refusal = std::get_if<TokenRefusal>(&checked)) {
      decided = VerifierRefusal{401, std::move(refusal->message)};
    } else {
      decided = std::move(std::get<VerifiedToken>(checked));
    }
    remember(digest, decided);
  }
  auto waiting = pending_.extract(digest);
  if (!waiting.empty()) {
    for (const Done& done : waiting.mapped()) done(decided);
  }
  while (!queue_.empty() && running_ < settings_.concurrency && !stopped_) {
    Queued next = std::move(queue_.front());
    queue_.pop_front();
    start(std::move(next));
  }
}

void Introspector::remember(const std::string& digest, const VerifierResult& result) {
  const auto now = std::chrono::steady_clock::now();
  std::chrono::seconds keep{settings_.inactive_cache_s};
  if (const auto* token = std::get_if<VerifiedToken>(&result)) {
    const std::int64_t left =
        token->expires_at - std::chrono::duration_cast<std::chrono::seconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
    keep = std::chrono::seconds(std::clamp<std::int64_t>(left, 0, settings_.cache_s));
  }
  if (keep.count() == 0) return;
  while (cache_.size() >= settings_.cache_entries && !cache_order_.empty()) {
    const auto [oldest, sequence] = cache_order_.front();
    cache_order_.pop_front();
    if (const auto it = cache_.find(oldest);
        it != cache_.end() && it->second.sequence == sequence) {
      cache_.erase(it);
    }
  }
  // Entries replaced or expired leave stale places in the order; they are skipped above, and
  // the order is compacted when it grows past twice the cache.
  if (cache_order_.size() > 2 * std::size_t{settings_.cache_entries}) {
    std::erase_if(cache_order_, [this](const auto& place) {
      const auto it = cache_.find(place.first);
      return it == cache_.end() || it->second.sequence != place.second;
    });
  }
  cache_[digest] = Cached{result, now + keep, ++sequence_};
  cache_order_.emplace_back(digest, sequence_);
}

}  // namespace codemode::auth
