#include "auth/token_exchanger.h"

#include <algorithm>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include "auth/access_token.h"

namespace codemode::auth {
namespace {

namespace asio = boost::asio;
using Json = nlohmann::json;

constexpr std::chrono::seconds kRequestTimeout{10};
// After discovery of the token endpoint failed, exchanges fail at once for this long rather
// than each asking the issuer again.
constexpr std::chrono::seconds kRediscoverAfter{10};
// An answer without `expires_in` is reused for this long at most.
constexpr std::int64_t kDefaultLifetime = 60;

constexpr std::string_view kGrantType = "urn:ietf:params:oauth:grant-type:token-exchange";
constexpr std::string_view kAccessTokenType = "urn:ietf:params:oauth:token-type:access_token";

// An OAuth error code as RFC 6749 §5.2 spells them: safe to repeat in an error message.
bool is_error_code(std::string_view code) {
  return !code.empty() && code.size() <= 64 && std::all_of(code.begin(), code.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || c == '_';
  });
}

std::string joined(const std::vector<std::string>& scopes) {
  std::string out;
  for (const std::string& scope : scopes) out += (out.empty() ? "" : " ") + scope;
  return out;
}

std::int64_t epoch_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::variant<std::shared_ptr<TokenExchanger>, std::vector<std::string>> TokenExchanger::create(
    asio::io_context& io, const config::OAuth& oauth,
    const std::optional<std::filesystem::path>& ca_file) {
  auto client = authorization_server_client(io, ca_file, 4);
  if (auto* problems = std::get_if<std::vector<std::string>>(&client)) return std::move(*problems);
  return std::shared_ptr<TokenExchanger>(new TokenExchanger(
      io, oauth, std::move(std::get<std::unique_ptr<gateway::HttpClient>>(client))));
}

TokenExchanger::TokenExchanger(asio::io_context& io, const config::OAuth& oauth,
                               std::unique_ptr<gateway::HttpClient> client)
    : strand_(asio::make_strand(io)),
      issuer_(oauth.issuer),
      leeway_(oauth.leeway_s),
      client_(std::move(client)) {}

void TokenExchanger::exchange(const config::TokenExchange& settings, const std::string& key,
                              std::string subject_token, std::int64_t subject_expires_at,
                              Done done) {
  Job job{key + '\n' + settings.audience + '\n' + settings.resource + '\n' +
              joined(settings.scopes) + '\n' + settings.client_id,
          settings, std::move(subject_token), subject_expires_at};
  asio::post(strand_, [self = shared_from_this(), job = std::move(job),
                       done = std::move(done)]() mutable {
    const auto now = std::chrono::steady_clock::now();
    if (const auto hit = self->cache_.find(job.key); hit != self->cache_.end()) {
      if (hit->second.until > now) return done(Exchanged{hit->second.token});
      self->cache_.erase(hit);
    }
    if (const auto joined = self->pending_.find(job.key); joined != self->pending_.end()) {
      joined->second.push_back(std::move(done));
      return;
    }
    if (self->pending_.size() >= kMaxPending) {
      return done(Failed{"too many token exchanges are in flight"});
    }
    self->pending_[job.key].push_back(std::move(done));
    std::string endpoint =
        job.settings.token_endpoint.empty() ? self->token_endpoint_ : job.settings.token_endpoint;
    if (!endpoint.empty()) return self->start(std::move(job), endpoint);
    if (self->last_discovery_failed_ && now - *self->last_discovery_failed_ < kRediscoverAfter) {
      return self->finish(job.key, Failed{"the issuer's token endpoint is not known (its "
                                          "metadata could not be read)"});
    }
    self->need_endpoint_.push_back(std::move(job));
    if (!self->discovering_) {
      self->discovering_ = true;
      self->discover(0);
    }
  });
}

void TokenExchanger::discover(std::size_t candidate) {
  const std::vector<std::string> urls = metadata_urls(issuer_);
  auto normalised = gateway::normalise_url(urls[candidate], "");
  if (std::holds_alternative<std::string>(normalised)) return discovered("no metadata URL");
  gateway::ClientRequest request;
  request.url = std::get<gateway::NormalisedUrl>(normalised);
  request.headers.emplace_back("Accept", "application/json");
  client_->send(
      std::move(request), gateway::Clock::now() + kRequestTimeout,
      [self = shared_from_this(), candidate, urls](gateway::ClientResult result) {
        asio::post(self->strand_, [self, candidate, urls, result = std::move(result)] {
          std::string problem;
          if (const auto* error = std::get_if<gateway::GatewayError>(&result)) {
            problem = error->message;
          } else if (const auto& response = std::get<gateway::InboundResponse>(result);
                     response.status != 200) {
            problem = urls[candidate] + " answered " + std::to_string(response.status);
          } else {
            auto read = read_issuer_metadata(response.body, urls[candidate], self->issuer_);
            if (auto* why = std::get_if<std::string>(&read)) {
              problem = std::move(*why);
            } else if (auto endpoint = metadata_endpoint(std::get<Json>(read), "token_endpoint")) {
              self->token_endpoint_ = std::move(*endpoint);
              spdlog::info("oauth: tokens are exchanged at {}", self->token_endpoint_);
            } else {
              problem = urls[candidate] + ": no usable token_endpoint";
            }
          }
          if (!problem.empty() && candidate + 1 < urls.size()) {
            return self->discover(candidate + 1);
          }
          self->discovered(problem);
        });
      });
}

void TokenExchanger::discovered(const std::string& problem) {
  discovering_ = false;
  std::vector<Job> jobs = std::exchange(need_endpoint_, {});
  if (token_endpoint_.empty()) {
    spdlog::warn("oauth: the issuer's token endpoint could not be found: {}", problem);
    last_discovery_failed_ = std::chrono::steady_clock::now();
    for (const Job& job : jobs) {
      finish(job.key, Failed{"the issuer's token endpoint is not known (its metadata could not "
                             "be read)"});
    }
    return;
  }
  last_discovery_failed_.reset();
  for (Job& job : jobs) start(std::move(job), token_endpoint_);
}

void TokenExchanger::start(Job job, const std::string& endpoint) {
  ++requests_;
  const std::string scope = joined(job.settings.scopes);
  std::vector<std::pair<std::string_view, std::string_view>> fields = {
      {"grant_type", kGrantType},
      {"subject_token", job.subject_token},
      {"subject_token_type", kAccessTokenType},
      {"requested_token_type", kAccessTokenType}};
  if (!job.settings.audience.empty()) fields.emplace_back("audience", job.settings.audience);
  if (!job.settings.resource.empty()) fields.emplace_back("resource", job.settings.resource);
  if (!scope.empty()) fields.emplace_back("scope", scope);
  std::string form = form_encode(fields);
  // Both made before `job` moves into the completion.
  std::string authorization =
      basic_authorization(job.settings.client_id, job.settings.client_secret);
  post_form(*client_, endpoint, std::move(authorization), std::move(form),
            gateway::Clock::now() + kRequestTimeout,
            [self = shared_from_this(), job = std::move(job)](FormResult result) mutable {
              asio::post(self->strand_, [self, job = std::move(job), result = std::move(result)] {
                self->answered(job, result);
              });
            });
}

void TokenExchanger::answered(const Job& job, const FormResult& result) {
  if (const auto* problem = std::get_if<std::string>(&result)) {
    return finish(job.key, Failed{"the token endpoint could not be reached: " + *problem});
  }
  const auto& answer = std::get<FormAnswer>(result);
  const Json body = Json::parse(answer.body, nullptr, false);
  if (answer.status != 200) {
    std::string code;
    if (body.is_object() && body.contains("error") && body["error"].is_string() &&
        is_error_code(body["error"].get_ref<const std::string&>())) {
      code = " " + body["error"].get<std::string>();
    }
    return finish(job.key, Failed{"the authorization server refused the exchange (" +
                                  std::to_string(answer.status) + code + ")"});
  }
  const auto token = body.is_object() ? body.find("access_token") : body.end();
  if (token == body.end() || !token->is_string() ||
      !is_b64token(token->get_ref<const std::string&>(), kMaxTokenBytes)) {
    return finish(job.key, Failed{"the authorization server's answer holds no usable "
                                  "access_token"});
  }
  const auto type = body.find("token_type");
  if (type == body.end() || !type->is_string() ||
      (type->get_ref<const std::string&>() != "Bearer" &&
       type->get_ref<const std::string&>() != "bearer")) {
    return finish(job.key, Failed{"the exchanged token is not a bearer token (token_type)"});
  }
  std::int64_t lifetime = kDefaultLifetime;
  if (const auto expires = body.find("expires_in");
      expires != body.end() && expires->is_number_integer()) {
    lifetime = expires->get<std::int64_t>();
  }
  lifetime = std::min(lifetime - leeway_.count(), job.subject_expires_at - epoch_seconds());
  std::string exchanged = token->get<std::string>();
  if (lifetime > 0) {
    while (cache_.size() >= kMaxCached && !cache_order_.empty()) {
      const auto [oldest, sequence] = cache_order_.front();
      cache_order_.pop_front();
      if (const auto it = cache_.find(oldest);
          it != cache_.end() && it->second.sequence == sequence) {
        cache_.erase(it);
      }
    }
    if (cache_order_.size() > 2 * kMaxCached) {
      std::erase_if(cache_order_, [this](const auto& place) {
        const auto it = cache_.find(place.first);
        return it == cache_.end() || it->second.sequence != place.second;
      });
    }
    cache_[job.key] = Cached{
        exchanged, std::chrono::steady_clock::now() + std::chrono::seconds(lifetime), ++sequence_};
    cache_order_.emplace_back(job.key, sequence_);
  }
  finish(job.key, Exchanged{std::move(exchanged)});
}

void TokenExchanger::finish(const std::string& key, const Result& result) {
  auto waiting = pending_.extract(key);
  if (waiting.empty()) return;
  for (const Done& done : waiting.mapped()) done(result);
}

}  // namespace codemode::auth
