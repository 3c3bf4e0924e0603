#include "gateway/gateway.h"

#include <spdlog/spdlog.h>

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <mutex>

#include "base/check.h"
#include "gateway/redaction.h"
#include "gateway/request_check.h"
#include "gateway/scope_policy.h"
#include "net/ascii.h"

namespace codemode::gateway {
namespace {

namespace net = boost::asio;

constexpr std::size_t kMaxQuotedMethod = 32;

using codemode::net::iequals;

GatewayError policy_error(std::string message) {
  return GatewayError{ErrorKind::policy, std::move(message)};
}

bool is_redirect(unsigned status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

// The path of a target, without the query: what log lines show.
std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

// Whose rules a request follows: the headers per upstream and the methods and operations.
struct Profile {
  std::vector<config::Upstream> upstreams;
  OperationPolicy operation_policy;
};

// Every configured header value, the defaults' and each principal's.
std::vector<config::Upstream> all_upstreams(const GatewayOptions& options) {
  std::vector<config::Upstream> all = options.upstreams;
  for (const auto& [name, profile] : options.principals) {
    all.insert(all.end(), profile.upstreams.begin(), profile.upstreams.end());
  }
  return all;
}

// A request on its way, possibly across same-origin redirects.
struct Attempt {
  const Profile* profile = nullptr;
  Method method = Method::get;
  NormalisedUrl url;
  std::size_t upstream = 0;
  Headers code_headers;  // checked, before credentials
  std::string bearer;    // an exchanged token sent as Authorization; empty: none
  // An upstream whose token is exchanged for the caller's (its profile's settings), with the
  // caller's token; null: none.
  const config::TokenExchange* exchange = nullptr;
  std::shared_ptr<const CallerAccessToken> access_token;
  std::string principal;  // whose call it is: an open question holds one of its places
  // The caller's scopes, for the requests a redirect makes; unset: not scoped.
  std::optional<std::vector<std::string>> scopes;
  std::string body;
  Deadline deadline;
  Clock::time_point started;
  unsigned redirects = 0;
  Gateway::Completion done;
  std::string approved_by;  // set when a person approved it
  // Set when the code's side may give up on the answer (its AbortSignal, its call ending).
  std::shared_ptr<FetchAbort> abort;
  // The approver to tell what the approved request got, and its question's ticket.
  std::shared_ptr<Approver> approver;
  std::uint64_t ticket = 0;
};

// One request waiting for a person's answer, on the gateway's I/O thread. Its body and the
// code's headers are held once, in `request` (what the person is shown), and go back into
// `attempt` when it is sent.
struct Question {
  explicit Question(net::io_context& io) : timer(io) {}
  Attempt attempt;
  ApprovalRequest request;
  std::shared_ptr<Approver> approver;
  WaitHook waiting;
  std::uint64_t ticket = 0;
  net::steady_timer timer;
  Clock::time_point asked;
  bool settled = false;
};

// What names a caller's access token in the exchange cache: its SHA-256, hex, so that the key
// never holds the token itself.
std::string subject_key(std::string_view token) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> hash{};
  unsigned int size = 0;
  CODEMODE_CHECK(
      EVP_Digest(token.data(), token.size(), hash.data(), &size, EVP_sha256(), nullptr) == 1,
      "SHA-256 over memory cannot fail");
  return "sha256:" +
         codemode::net::to_hex(std::string_view(reinterpret_cast<const char*>(hash.data()), size));
}

std::string verdict_text(const ApprovalAnswer& answer, std::chrono::milliseconds timeout) {
  switch (answer.verdict) {
    case Verdict::accepted:
      return "approved";
    case Verdict::declined:
      return "the user declined it";
    case Verdict::cancelled:
      return "the user dismissed the question without approving it";
    case Verdict::unanswered:
      return "no answer from the user within " + std::to_string(timeout.count()) + " ms";
    case Verdict::deferred:
      return "the call stops here; the client is to ask its user and call again";
    case Verdict::impossible:
      break;
  }
  return "approval required, but this client cannot ask its user";
}

// A request that passed the checks of Gateway::fetch(): what it becomes, and whether a person
// is asked about it first.
struct Admitted {
  Method method = Method::get;
  Allowed allowed;
  CheckedHeaders headers;
  bool ask_first = false;                         // policy.approve asks about it
  const Operation* approval_operation = nullptr;  // the described operation it matches, if any
};

// The answer to every fetch of a call past its refusals (CallBudget::kRefusals), unchecked. Only
// the first is recorded by the observers that keep one record per request.
GatewayError refusal_limit_reached(CallBudget& budget) {
  GatewayError error = policy_error(
      "subrequest limit reached: this call had " + std::to_string(budget.refusal_limit()) +
      " requests refused, the most a call may have; it sends no more");
  error.repeated = !budget.first_past_refusal_limit();
  return error;
}

// The request on its way: `admitted`'s method, URL and the code's checked headers, with the
// caller's settings a followed redirect and a token exchange need.
Attempt attempt_of(Admitted&& admitted, const Profile& profile, std::string body, Deadline deadline,
                   Gateway::Completion done, const Caller& caller,
                   const std::shared_ptr<FetchAbort>& abort) {
  Attempt attempt;
  attempt.profile = &profile;
  attempt.method = admitted.method;
  attempt.url = std::move(admitted.allowed.url);
  attempt.upstream = admitted.allowed.upstream;
  attempt.code_headers = std::move(admitted.headers.headers);
  attempt.body = std::move(body);
  attempt.deadline = deadline;
  attempt.started = Clock::now();
  attempt.done = std::move(done);
  attempt.principal = caller.principal;
  attempt.scopes = caller.scopes;
  attempt.abort = abort;
  if (const auto& exchange = profile.upstreams[attempt.upstream].token_exchange) {
    attempt.exchange = &*exchange;
    attempt.access_token = caller.access_token;
  }
  return attempt;
}

// The question a person is asked about `attempt` (`operation`: the described one it matches, if
// any). The question holds the one copy of the body and the code's headers while it waits.
std::shared_ptr<Question> question_about(Attempt attempt, const Operation* operation,
                                         const Caller& caller, const WaitHook& waiting,
                                         net::io_context& io) {
  auto question = std::make_shared<Question>(io);
  ApprovalRequest& asked = question->request;
  asked.method = to_string(attempt.method);
  asked.url = attempt.url.origin + attempt.url.target;
  if (operation != nullptr) {
    asked.operation = std::string(to_string(operation->method)) + " " + operation->path_template;
    asked.operation_id = operation->id;
    asked.summary = operation->summary;
  }
  for (const auto& [name, value] : attempt.code_headers) {
    if (iequals(name, "content-type")) asked.content_type = value;
  }
  asked.headers = std::move(attempt.code_headers);
  asked.body = std::move(attempt.body);
  asked.digest = approval_digest(asked.method, asked.url, asked.headers, asked.body);
  question->attempt = std::move(attempt);
  question->approver = caller.approver;
  question->waiting = waiting;
  return question;
}

}  // namespace

bool CallBudget::try_spend() {
  std::uint32_t used = used_.load();
  while (used < limit_) {
    if (used_.compare_exchange_weak(used, used + 1)) return true;
  }
  return false;
}

struct Gateway::State : std::enable_shared_from_this<Gateway::State> {
  State(net::io_context& io_context, GatewayOptions opts, std::unique_ptr<HttpClient> http)
      : io(io_context),
        options(std::move(opts)),
        policy(options.upstreams),
        defaults{options.upstreams, OperationPolicy(options.operations)},
        scope_policy(options.request_scopes),
        client(std::move(http)),
        secrets(secrets_of(all_upstreams(options))) {
    for (const auto& [name, profile] : options.principals) {
      principals.emplace(name, Profile{profile.upstreams, OperationPolicy(profile.operations)});
    }
  }

  net::io_context& io;
  GatewayOptions options;
  UrlPolicy policy;
  Profile defaults;
  std::map<std::string, Profile, std::less<>> principals;
  ScopePolicy scope_policy;  // what a scoped caller's requests need (request_scopes)
  std::unique_ptr<HttpClient> client;
  // Every form of every configured credential (redaction.h): owned here, for the gateway's
  // lifetime; redaction borrows it per response and per message.
  const std::vector<std::string> secrets;
  // The described operations, for policy.approve; none given: matches nothing.
  OperationPolicy approval_operations{options.approval ? options.approval->operations
                                                       : OperationPolicyOptions{}};
  std::uint64_t next_ticket = 0;  // on the I/O thread
  // Questions waiting for an answer, by principal (ApprovalSettings::open_per_principal).
  std::mutex open_mutex;
  std::map<std::string, std::size_t, std::less<>> open_questions;

  // Whether `method` to `target` waits for a person's yes (policy.approve), and the described
  // operation it matches, if any.
  bool needs_yes(Method method, std::string_view target, const Operation** operation) const {
    if (!options.approval) return false;
    *operation = approval_operations.find(method, target);
    return needs_approval(options.approval->rules, method, path_of(target), *operation,
                          options.approval->operations.base_paths);
  }

  // Takes one of `principal`'s open-question places; false when all are taken.
  bool open_question(const std::string& principal) {
    std::lock_guard lock(open_mutex);
    std::size_t& open = open_questions[principal];
    if (open >= options.approval->open_per_principal) {
      if (open == 0) open_questions.erase(principal);
      return false;
    }
    ++open;
    return true;
  }

  void close_question(const std::string& principal) {
    std::lock_guard lock(open_mutex);
    const auto it = open_questions.find(principal);
    CODEMODE_CHECK(it != open_questions.end() && it->second > 0,
                   "each settled question took a place when it was asked");
    if (--it->second == 0) open_questions.erase(it);
  }

  const Profile& profile_of(const Caller& caller) const {
    if (const auto it = principals.find(caller.principal); it != principals.end())
      return it->second;
    if (caller.profile.empty()) return defaults;
    const auto it = principals.find(caller.profile);
    return it == principals.end() ? defaults : it->second;
  }

  // What the request is, checked in this order: method, URL and origin, operations, body, headers.
  std::variant<Admitted, GatewayError> check_request(const OutboundRequest& request,
                                                     const Profile& profile) const {
    const std::optional<Method> method = parse_method(request.method);
    if (!method) {
      const bool quotable =
          is_header_name(request.method) && request.method.size() <= kMaxQuotedMethod;
      return policy_error((quotable ? "method " + request.method + " is not allowed"
                                    : std::string("method is not allowed")) +
                          " (GET, POST, PUT, PATCH, DELETE, HEAD)");
    }
    PolicyDecision decision = policy.decide(request.url);
    if (auto* refused = std::get_if<Refused>(&decision)) {
      return policy_error(std::move(refused->message));
    }
    Allowed& allowed = std::get<Allowed>(decision);
    if (auto refused = profile.operation_policy.check(*method, allowed.url.target)) {
      return policy_error(std::move(*refused));
    }
    if ((*method == Method::get || *method == Method::head) && !request.body.empty()) {
      return policy_error(std::string(to_string(*method)) + " request cannot have a body");
    }
    if (request.body.size() > options.request_body_bytes) {
      return policy_error("request body exceeds " + std::to_string(options.request_body_bytes) +
                          " bytes");
    }
    auto headers = check_headers(request.headers);
    if (auto* error = std::get_if<GatewayError>(&headers)) return std::move(*error);
    return Admitted{*method, std::move(allowed), std::move(std::get<CheckedHeaders>(headers))};
  }

  // What the caller may send, checked after the request, in this order: its scopes, whether a
  // person can be asked when one must be, its token for an exchange, a place for its question,
  // then one unit of its budget. Sets `admitted`'s approval; a refusal holds no place.
  std::optional<GatewayError> check_caller(Admitted& admitted, const Caller& caller,
                                           const Profile& profile, CallBudget& budget) {
    const Method method = admitted.method;
    const NormalisedUrl& url = admitted.allowed.url;
    if (caller.scopes) {
      if (auto refused = scope_policy.check(method, url.target, *caller.scopes)) {
        return policy_error(std::move(*refused));
      }
    }
    admitted.ask_first = needs_yes(method, url.target, &admitted.approval_operation);
    const auto what = [&] {
      return std::string(to_string(method)) + " " + url.origin + std::string(path_of(url.target));
    };
    if (admitted.ask_first && !caller.approver) {
      return policy_error(verdict_text({Verdict::impossible, {}, std::nullopt}, {}) + ": " +
                          what());
    }
    const auto& exchange = profile.upstreams[admitted.allowed.upstream].token_exchange;
    if (exchange && (!caller.access_token || !options.exchange_token)) {
      return policy_error("requests to " + url.origin +
                          " carry a token exchanged for the caller's OAuth access token, and this "
                          "call came without one (a static token or stdio)");
    }
    if (admitted.ask_first && !open_question(caller.principal)) {
      return policy_error(
          "approval required, and " + std::to_string(options.approval->open_per_principal) +
          " questions already wait for this principal's answer, the most that may wait at once: " +
          what());
    }
    if (!budget.try_spend()) {
      if (admitted.ask_first) close_question(caller.principal);
      return policy_error("subrequest limit " + std::to_string(budget.limit()) + " reached");
    }
    return std::nullopt;
  }

  // Many frameworks take the method or path from these instead of the request line, which would
  // walk around the methods and operations just checked, or the approval rules (a POST nobody is
  // asked about that the upstream runs as the DELETE they would ask about).
  void drop_override_headers(const Profile& profile, CheckedHeaders& headers) const {
    if (profile.operation_policy.restricts() || options.approval) {
      std::erase_if(headers.headers, [&](const Header& header) {
        if (!is_override_header(header.first)) return false;
        headers.dropped.push_back(header.first);
        return true;
      });
    }
    if (!headers.dropped.empty()) {
      std::string names;
      for (const auto& name : headers.dropped) names += (names.empty() ? "" : ", ") + name;
      spdlog::debug("gateway: dropped headers the gateway owns: {}", scrub(names));
    }
  }

  // Our own text (errors, log lines) never shows a configured credential, even when the code
  // or the upstream put one into a URL or a message.
  std::string scrub(std::string text) const { return gateway::scrub(std::move(text), secrets); }

  // Asks `question`'s approver on the I/O thread, then sends or refuses its request.
  void ask(std::shared_ptr<Question> question) {
    net::post(io, [self = shared_from_this(), question = std::move(question)] {
      question->ticket = ++self->next_ticket;
      question->asked = Clock::now();
      if (question->waiting) question->waiting(true);
      spdlog::info("approval: asking about {} {}", question->request.method,
                   self->scrub(question->request.url));
      question->timer.expires_after(self->options.approval->timeout);
      question->timer.async_wait([self, question](boost::system::error_code error) {
        if (error || question->settled) return;
        // Withdrawn before the fetch hears of it: whoever learns from the refusal that the
        // question timed out finds the approver told already.
        question->approver->withdraw(question->ticket);
        self->settle(*question, {Verdict::unanswered, {}, std::nullopt});
      });
      // The code gave up on the request (its AbortSignal, its call ended): nobody waits for
      // the person's answer any more, so the question is withdrawn rather than left open.
      if (const auto& abort = question->attempt.abort) {
        abort->on_abort([self, asked = std::weak_ptr<Question>(question)] {
          net::post(self->io, [self, asked] {
            if (auto question = asked.lock()) self->abandon(*question);
          });
        });
      }
      // The answer holds the question weakly: an approver keeps its answers (a session until
      // the client replies), and the question holds the approver. While unanswered, the timer's
      // handler keeps the question alive; once settled, a later answer finds nothing.
      question->approver->ask(
          question->ticket, question->request,
          [self, asked = std::weak_ptr<Question>(question)](ApprovalAnswer answer) {
            net::post(self->io, [self, asked, answer = std::move(answer)] {
              if (auto question = asked.lock()) self->settle(*question, answer);
            });
          });
    });
  }

  // Withdraws a question whose request was given up on before the person answered.
  void abandon(Question& question) {
    if (std::exchange(question.settled, true)) return;
    question.timer.cancel();
    close_question(question.attempt.principal);
    if (question.waiting) question.waiting(false);
    question.approver->withdraw(question.ticket);
    const std::string what = question.request.method + " " + scrub(question.request.url);
    spdlog::info("approval: {}: withdrawn, the request was aborted before an answer", what);
    Attempt attempt = std::move(question.attempt);
    question.request.body = {};
    attempt.done(GatewayError{ErrorKind::runtime,
                              "request to " + attempt.url.origin + " aborted before it was sent"});
  }

  void settle(Question& question, const ApprovalAnswer& answer) {
    if (std::exchange(question.settled, true)) return;
    question.timer.cancel();
    close_question(question.attempt.principal);
    const auto waited = Clock::now() - question.asked;
    if (question.waiting) question.waiting(false);
    const std::string verdict = verdict_text(answer, options.approval->timeout);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(waited).count();
    const std::string what = question.request.method + " " + scrub(question.request.url);
    spdlog::info("approval: {}: {}{} after {} ms", what, verdict,
                 answer.by.empty() ? std::string() : " (" + answer.by + ")", ms);
    Attempt attempt = std::move(question.attempt);
    if (answer.verdict != Verdict::accepted) {
      question.request.body = {};  // let go of it now, not when the last handler lets go
      attempt.done(policy_error(verdict + ": " + what));
      return;
    }
    attempt.approved_by = answer.by.empty() ? std::string("the user") : answer.by;
    if (answer.replay) {
      // Made in an earlier round of this call: its response again, nothing sent.
      FetchResult replay = *answer.replay;
      if (auto* response = std::get_if<InboundResponse>(&replay)) {
        response->approved_by = attempt.approved_by;
      }
      attempt.done(std::move(replay));
      return;
    }
    attempt.body = std::move(question.request.body);
    attempt.code_headers = std::move(question.request.headers);
    attempt.deadline += waited;  // the wait is not the request's time
    attempt.started = Clock::now();
    attempt.approver = question.approver;
    attempt.ticket = question.ticket;
    proceed(std::move(attempt));
  }

  void refuse(Completion done, GatewayError error) {
    error.message = scrub(std::move(error.message));
    spdlog::debug("gateway: refused: {}", error.message);
    net::post(io, [done = std::move(done), error = std::move(error)]() mutable {
      done(std::move(error));
    });
  }

  // Sends `attempt`, with the token exchanged for its caller's first when its upstream asks so.
  void proceed(Attempt attempt) {
    if (attempt.exchange == nullptr) return send(std::move(attempt));
    exchange_then_send(std::move(attempt));
  }

  // Gets the attempt's upstream token in exchange for the caller's (options.exchange_token),
  // then sends it; a failed exchange fails the fetch.
  void exchange_then_send(Attempt attempt) {
    // By the subject token, not the principal: one person's tokens may grant different scopes
    // (a plugin's and an admin console's), and the authorization server decides per token.
    const std::string key = subject_key(attempt.access_token->value) + " " + attempt.url.origin;
    const config::TokenExchange& settings = *attempt.exchange;
    const std::shared_ptr<const CallerAccessToken> token = attempt.access_token;
    auto shared = std::make_shared<Attempt>(std::move(attempt));
    options.exchange_token(
        settings, key, *token,
        [self = shared_from_this(), shared](std::variant<ExchangedToken, GatewayError> result) {
          net::post(self->io, [self, shared, result = std::move(result)]() mutable {
            Attempt attempt = std::move(*shared);
            if (auto* error = std::get_if<GatewayError>(&result)) {
              error->message =
                  "token exchange for " + attempt.url.origin + " failed: " + error->message;
              spdlog::warn("gateway: {}", error->message);
              return attempt.done(std::move(*error));
            }
            attempt.bearer = std::move(std::get<ExchangedToken>(result).value);
            self->send(std::move(attempt));
          });
        });
  }

  void send(Attempt attempt) {
    Headers headers =
        inject_credentials(attempt.code_headers, attempt.profile->upstreams[attempt.upstream]);
    if (!attempt.bearer.empty()) {
      std::erase_if(headers, [](const Header& h) { return iequals(h.first, "authorization"); });
      headers.emplace_back("Authorization", "Bearer " + attempt.bearer);
    }
    NormalisedUrl url = attempt.url;
    if (const auto& query = attempt.profile->upstreams[attempt.upstream].query; !query.empty()) {
      url.target = with_query_credentials(url.target, query);
    }
    ClientRequest request{attempt.method, std::move(url), std::move(headers), attempt.body};
    const Deadline deadline = attempt.deadline;
    std::shared_ptr<FetchAbort> abort = attempt.abort;
    if (abort && abort->aborted()) {
      // Given up on while it waited (for a person, a token exchange): it never leaves.
      ClientResult result = GatewayError{
          ErrorKind::runtime, "request to " + attempt.url.origin + " aborted before it was sent"};
      return on_result(std::move(attempt), result);
    }
    client->send(
        std::move(request), deadline,
        [self = shared_from_this(), attempt = std::move(attempt)](ClientResult result) mutable {
          self->on_result(std::move(attempt), result);
        },
        abort);
  }

  void on_result(Attempt attempt, ClientResult& result) {
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - attempt.started)
            .count();
    const std::string where = scrub(attempt.url.origin + std::string(path_of(attempt.url.target)));
    if (auto* error = std::get_if<GatewayError>(&result)) {
      error->message = scrub(std::move(error->message));
      spdlog::debug("gateway: {} {} failed after {} ms: {}", to_string(attempt.method), where, ms,
                    error->message);
      if (attempt.approver) attempt.approver->sent(attempt.ticket, *error);
      attempt.done(std::move(*error));
      return;
    }
    auto& response = std::get<InboundResponse>(result);
    // The URL as the code asked for it: without the query credentials the request carried.
    response.final_url = attempt.url.full();
    spdlog::debug("gateway: {} {} -> {} in {} ms", to_string(attempt.method), where,
                  response.status, ms);
    response.redirects = attempt.redirects;
    if (is_redirect(response.status) && attempt.redirects < kMaxRedirects &&
        follow(attempt, response)) {
      return;
    }
    // An upstream that echoes a credential back must not hand it to the code: the configured
    // ones and the token this request carried are redacted from all of the response.
    redact(response, attempt.method, secrets, attempt.bearer);
    response.approved_by = attempt.approved_by;
    if (attempt.approver) attempt.approver->sent(attempt.ticket, response);
    attempt.done(std::move(response));
  }

  // Sends the next request of a same-origin redirect; false: the 3xx goes back to the code
  // (no Location, a Location that is refused or on another origin, or a next request that the
  // caller could not make itself: one the operations policy refuses, one its scopes do not
  // cover, one that needs approval).
  bool follow(Attempt& attempt, const InboundResponse& response) {
    const auto location =
        std::find_if(response.headers.begin(), response.headers.end(),
                     [](const Header& h) { return iequals(h.first, "location"); });
    if (location == response.headers.end()) return false;
    PolicyDecision decision = policy.decide(location->second, attempt.url.full());
    auto* allowed = std::get_if<Allowed>(&decision);
    if (allowed == nullptr || allowed->url.origin != attempt.url.origin) {
      spdlog::debug("gateway: not following a redirect from {} ({})", attempt.url.origin,
                    allowed == nullptr ? "refused by policy" : "another origin");
      return false;
    }
    // As fetch does: 303 turns anything but HEAD into GET, 301/302 turn POST into GET; the
    // body and the headers that describe it go.
    const bool to_get =
        (response.status == 303 && attempt.method != Method::head &&
         attempt.method != Method::get) ||
        ((response.status == 301 || response.status == 302) && attempt.method == Method::post);
    const Method next = to_get ? Method::get : attempt.method;
    const std::string_view target = allowed->url.target;
    if (attempt.profile->operation_policy.check(next, target)) {
      spdlog::debug("gateway: not following a redirect to an operation the policy refuses");
      return false;
    }
    if (attempt.scopes && scope_policy.check(next, target, *attempt.scopes)) {
      spdlog::debug("gateway: not following a redirect to a request the caller's scopes miss");
      return false;
    }
    // A next request that needs a person's yes is not made behind their back, nor on the yes
    // they gave the first (another URL): the code gets the 3xx, and its own fetch of the
    // Location is asked about.
    const Operation* operation = nullptr;
    if (needs_yes(next, target, &operation)) {
      spdlog::debug("gateway: not following a redirect to a request that needs approval");
      return false;
    }
    if (to_get) {
      attempt.method = Method::get;
      attempt.body.clear();
      std::erase_if(attempt.code_headers, [](const Header& h) {
        return iequals(h.first, "content-type") || iequals(h.first, "content-encoding") ||
               iequals(h.first, "content-language") || iequals(h.first, "content-location");
      });
    }
    attempt.url = std::move(allowed->url);
    ++attempt.redirects;
    send(std::move(attempt));
    return true;
  }
};

std::variant<std::unique_ptr<Gateway>, std::vector<std::string>> Gateway::create(
    net::io_context& io, GatewayOptions options) {
  std::vector<std::string> problems = UrlPolicy(options.upstreams).problems();
  for (const auto& [name, profile] : options.principals) {
    const bool same_origins = std::equal(
        profile.upstreams.begin(), profile.upstreams.end(), options.upstreams.begin(),
        options.upstreams.end(),
        [](const config::Upstream& a, const config::Upstream& b) { return a.origin == b.origin; });
    if (!same_origins) {
      problems.push_back("principal " + name +
                         ": its upstreams must be the configured ones, in the same order");
    }
  }
  ClientOptions client_options;
  client_options.ca_file = options.ca_file;
  client_options.system_trust = options.system_trust;
  client_options.connect_timeout = options.connect_timeout;
  client_options.response_bytes = options.limits.response_bytes;
  auto client = HttpClient::create(io, std::move(client_options));
  if (auto* client_problems = std::get_if<std::vector<std::string>>(&client)) {
    problems.insert(problems.end(), client_problems->begin(), client_problems->end());
  }
  if (!problems.empty()) return problems;
  auto state = std::make_shared<State>(io, std::move(options),
                                       std::move(std::get<std::unique_ptr<HttpClient>>(client)));
  return std::unique_ptr<Gateway>(new Gateway(std::move(state)));
}

Gateway::Gateway(std::shared_ptr<State> state) : state_(std::move(state)) {}

Gateway::~Gateway() = default;

const UrlPolicy& Gateway::policy() const { return state_->policy; }

void Gateway::fetch(OutboundRequest request, CallBudget& budget, Deadline deadline, Completion done,
                    const Caller& caller, const WaitHook& waiting,
                    const std::shared_ptr<FetchAbort>& abort) {
  if (budget.refusals_exhausted()) {
    return state_->refuse(std::move(done), refusal_limit_reached(budget));
  }
  const Profile& profile = state_->profile_of(caller);
  std::variant<Admitted, GatewayError> checked = state_->check_request(request, profile);
  if (auto* admitted = std::get_if<Admitted>(&checked)) {
    if (auto refused = state_->check_caller(*admitted, caller, profile, budget)) {
      checked = std::move(*refused);
    }
  }
  if (auto* error = std::get_if<GatewayError>(&checked)) {
    budget.refused();
    return state_->refuse(std::move(done), std::move(*error));
  }
  Admitted& admitted = std::get<Admitted>(checked);
  state_->drop_override_headers(profile, admitted.headers);
  const bool ask_first = admitted.ask_first;
  const Operation* operation = admitted.approval_operation;
  Attempt attempt = attempt_of(std::move(admitted), profile, std::move(request.body), deadline,
                               std::move(done), caller, abort);
  if (!ask_first) return state_->proceed(std::move(attempt));
  state_->ask(question_about(std::move(attempt), operation, caller, waiting, state_->io));
}

}  // namespace codemode::gateway
