// The gateway: the only way out of an `execute` isolate (docs/architecture.md, "Security
// layers", layer 6).
//
// A request from the code arrives as plain data and goes through, in order: method check, URL
// normalisation and the origin allowlist, body and header checks, the call's subrequest
// budget, credential injection, then the HTTP client. Same-origin redirects are followed (at
// most kMaxRedirects, the policy and credentials applied again each time); a redirect anywhere
// else comes back to the code as the 3xx response itself, so no request, and no credential,
// ever reaches an origin off the list. Default deny: no upstreams, no requests.
//
// Threading: built once at start-up from config; fetch() may be called from any thread (a
// sandbox worker). The checks run on the calling thread (the policy is immutable); the request
// is then posted to the io_context the gateway was built with, and `done` runs exactly once on
// that I/O thread, for refusals too, so a caller never sees its completion re-entrantly. The
// sandbox posts it back to its worker. The Gateway must outlive its fetch() calls' starts, not
// their completions: each completion keeps what it needs alive.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "config/config.h"
#include "gateway/approval.h"
#include "gateway/call_scope.h"
#include "gateway/http_client.h"
#include "gateway/operation_policy.h"
#include "gateway/request.h"
#include "gateway/scope_policy.h"
#include "gateway/url_policy.h"

namespace codemode::gateway {

inline constexpr unsigned kMaxRedirects = 3;

// The subrequest budget of one execute call. The sandbox creates one per call from
// Limits::subrequests and passes it to every fetch() of that call. Each fetch() the policy
// allows spends one unit (before anything is sent); the N+1th is refused with
// "subrequest limit N reached". Same-origin redirects the gateway follows are part of the
// fetch() that caused them and cost nothing more.
//
// A refused fetch() costs no unit, but refusals are counted too: once `refusals` of them were
// refused, every later fetch() of the call is refused at once, unchecked and unsent ("subrequest
// limit reached: this call had 100 requests refused, ..."), so code that loops over refused
// requests cannot make the gateway check, log and answer without end.
// Thread-safe (atomic), though a call's fetch()es all come from its one worker thread.
class CallBudget {
 public:
  static constexpr std::uint32_t kRefusals = 100;

  explicit CallBudget(std::uint32_t subrequests, std::uint32_t refusals = kRefusals)
      : limit_(subrequests), refusal_limit_(refusals) {}
  CallBudget(const CallBudget&) = delete;
  CallBudget& operator=(const CallBudget&) = delete;

  // True and one unit spent, or false when the budget is used up.
  bool try_spend();
  std::uint32_t used() const { return used_.load(); }
  std::uint32_t limit() const { return limit_; }

  // Counts one refused fetch().
  void refused() { ++refused_; }
  // Whether the call had as many fetch()es refused as it may.
  bool refusals_exhausted() const { return refused_.load() >= refusal_limit_; }
  // Counts one fetch() refused past that bound; true for the first of them only.
  bool first_past_refusal_limit() { return past_limit_++ == 0; }
  std::uint32_t refusal_limit() const { return refusal_limit_; }

 private:
  const std::uint32_t limit_;
  const std::uint32_t refusal_limit_;
  std::atomic<std::uint32_t> used_{0};
  std::atomic<std::uint32_t> refused_{0};
  std::atomic<std::uint32_t> past_limit_{0};
};

// What one principal's requests get instead of the defaults (config `principals`): its own
// headers for each upstream and its own methods and operations. `upstreams` lists the same
// origins as GatewayOptions::upstreams, in the same order (the allowlist is shared); only the
// headers differ.
struct PrincipalProfile {
  std::vector<config::Upstream> upstreams;
  OperationPolicyOptions operations;
};

// Requests that wait for a person's yes (config policy.approve).
struct ApprovalSettings {
  ApprovalRules rules;
  // The operations the API description declares (ids, tags, summaries), matched for the rules
  // and shown in the question; also the base paths.
  OperationPolicyOptions operations;
  std::chrono::milliseconds timeout{120000};
  // Questions of one principal that may wait for an answer at once; one more request that needs
  // approval is refused (`policy`) until one is settled. Each holds its request's body, up to
  // GatewayOptions::request_body_bytes.
  std::size_t open_per_principal = 16;
};

// Tells the sandbox when a fetch starts (true) and stops (false) waiting for a person, so that
// the wait does not count against the call's wall_ms. Any thread.
using WaitHook = std::function<void(bool waiting)>;

// A downstream token for an upstream with `token_exchange`, got for a caller's access token.
struct ExchangedToken {
  std::string value;  // sent as `Authorization: Bearer <value>`; never logged
};
using ExchangeDone = std::function<void(std::variant<ExchangedToken, GatewayError>)>;
// Gets the token for `settings` in exchange for `token`, caching it under `key` (a SHA-256 of the
// caller's token and the upstream's origin: one principal's tokens may grant different scopes,
// so an exchanged token is reused for the same subject token only); `done` may run on any
// thread, once. The daemon wires
// auth::TokenExchanger here; the gateway itself knows no authorization server.
using TokenExchangeFunction =
    std::function<void(const config::TokenExchange& settings, const std::string& key,
                       const CallerAccessToken& token, ExchangeDone done)>;

struct GatewayOptions {
  std::vector<config::Upstream> upstreams;
  config::Limits limits;  // response_bytes and subrequests are the ones used here
  // PEM certificates trusted for HTTPS upstreams in addition to the system store.
  std::optional<std::filesystem::path> ca_file;
  // Largest request body the code may send.
  std::size_t request_body_bytes = 1048576;
  ClientOptions::SystemTrust system_trust = ClientOptions::SystemTrust::use_system_store;
  std::chrono::milliseconds connect_timeout{5000};
  // Spec-aware narrowing (config `policy`): by default every path and method passes.
  OperationPolicyOptions operations;
  // By principal name; anyone else gets `upstreams`' headers and `operations`.
  std::map<std::string, PrincipalProfile> principals;
  RequestScopes request_scopes;
  std::optional<ApprovalSettings> approval;  // unset: no request waits for approval
  // For upstreams (top-level or a principal's) with `token_exchange`: a request from a caller
  // with an access token carries the exchanged token as its Authorization; one from a caller
  // without is refused (`policy`), as is every such request when this is empty. A failed
  // exchange fails that fetch (`runtime`), naming the origin and never a token.
  TokenExchangeFunction exchange_token;
};

class Gateway {
 public:
  using Completion = std::function<void(FetchResult)>;

  // Start-up problems (an upstream origin that does not normalise, an unreadable CA file) come
  // back as lines, like config problems; main prints them and exits 2.
  static std::variant<std::unique_ptr<Gateway>, std::vector<std::string>> create(
      boost::asio::io_context& io, GatewayOptions options);
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  // Sends `request` if the policy allows it, within `budget` and by `deadline`; `done` runs
  // exactly once on the I/O thread with the response or a GatewayError. `caller` is whose call
  // it is: a principal with a profile gets that profile's policy and headers, and a scoped caller
  // needs the scopes of `request_scopes` for the request's method and operation. Every request a
  // followed redirect makes is checked again (operations, scopes, approvals) as if the code had
  // made it; one that fails a check is not made, and the code gets the 3xx. A request that needs
  // approval is asked about through `caller.approver` once every other check passed; `waiting`
  // hears when the wait for the answer starts and ends, and the time it took is added to
  // `deadline`. Once `abort` aborts, a request not yet sent is not sent (a question waiting for
  // a person is withdrawn) and one on the wire is stopped (HttpClient::send); `done` then gets a
  // runtime error saying it was aborted.
  void fetch(OutboundRequest request, CallBudget& budget, Deadline deadline, Completion done,
             const Caller& caller = {}, const WaitHook& waiting = {},
             const std::shared_ptr<FetchAbort>& abort = nullptr);

  const UrlPolicy& policy() const;

  struct State;

 private:
  explicit Gateway(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace codemode::gateway
