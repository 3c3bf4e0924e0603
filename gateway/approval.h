// Human approval of execute's requests (config `policy.approve`; README.md, "Approvals").
//
// Which requests wait for a person is the gateway's decision (ApprovalRules, over the methods
// and the operations the API description declares); how a person is asked is not: the gateway
// hands an ApprovalRequest to the call's Approver (the MCP session that made the call asks its
// client, mcp/approvals.h) and sends the request only after an `accepted`. A call with no
// Approver, or whose Approver cannot ask, gets the request refused as `policy`.
//
// The request a person sees is the request that leaves: the normalised URL and the body as sent,
// and `digest` binds an approval to exactly that (method, URL, body).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/operation_policy.h"
#include "gateway/request.h"
#include "gateway/request_check.h"

namespace codemode::gateway {

// config::Approval, parsed: a request needs approval when its method is in `methods` (HEAD
// counts as GET) and, when any of `operations`, `tags` or `paths` is given, it matches one of
// them, or matches no declared operation while `operations` or `tags` are given (fail closed).
struct ApprovalRules {
  std::set<Method> methods;
  std::vector<std::string> operations;  // operationIds
  std::vector<std::string> tags;
  // `*`: one segment; `**`: any number of segments. The path is read as the operations are
  // matched (path_match.h: `/Orders//`, `/orders;x=1` and `/orders.json` are `/orders`).
  std::vector<std::string> paths;
};

// Whether `path` (no query) matches `pattern` ("/orders/*/cancel", "/admin/**").
bool path_matches(std::string_view pattern, std::string_view path);

// Whether a request with `method` to `path`, matching `operation` (nullptr: none declared),
// needs approval under `rules`. `base_paths`: prefixes the API is served under, tried off the
// path for `paths` patterns. `operation` comes from OperationPolicy::find, the one matcher.
bool needs_approval(const ApprovalRules& rules, Method method, std::string_view path,
                    const Operation* operation, const std::vector<std::string>& base_paths);

// What a person is asked about: one request exactly as the gateway will send it.
struct ApprovalRequest {
  std::string method;     // "POST"
  std::string url;        // normalised, as it will be sent
  std::string operation;  // "POST /orders" when one is declared; else empty
  std::string operation_id;
  std::string summary;  // the operation's summary from the API description; may be empty
  // The code's headers, as they will be sent; the gateway adds its own after (credentials,
  // which nobody is shown, and traceparent).
  Headers headers;
  std::string body;  // as it will be sent (the asker cuts it for display)
  std::string content_type;
  std::string digest;  // approval_digest(method, url, headers, body)
};

// SHA-256 of method, URL, the code's headers (names in lower case, sorted; their order and the
// case of names change nothing a server reads) and body, hex: what an approval binds to. A
// request that differs in any of them (another `Stripe-Account`, another patch format) is
// another request.
std::string approval_digest(std::string_view method, std::string_view url, const Headers& headers,
                            std::string_view body);

enum class Verdict {
  accepted,
  declined,    // the person said no
  cancelled,   // the person dismissed the prompt
  unanswered,  // no answer within policy.approval_timeout_ms
  impossible,  // nobody can be asked (the client cannot ask its user)
  deferred,    // the question goes back with the call's result, which ends here (MCP 2026-07-28)
};

struct ApprovalAnswer {
  Verdict verdict = Verdict::declined;
  // Who answered, for the log and the audit trail ("sub:alice via Claude Desktop 1.2"); the
  // principal when nothing better is known.
  std::string by;
  // With `accepted`: the request was already made, approved, in an earlier round of the same
  // call (MCP 2026-07-28's retries run the code again): this is its response, and nothing is
  // sent again.
  std::optional<FetchResult> replay;
};

class Approver {
 public:
  virtual ~Approver() = default;
  // Asks about `request`. `answer` runs at most once, on any thread; `ticket` names the question
  // for withdraw().
  virtual void ask(std::uint64_t ticket, const ApprovalRequest& request,
                   std::function<void(ApprovalAnswer)> answer) = 0;
  // The question `ticket` is no longer waited for (it timed out, or its call ended): the
  // approver may take the prompt back; a later answer is ignored.
  virtual void withdraw(std::uint64_t ticket) = 0;
  // The request approved as `ticket` was sent and this is what came back (on the gateway's I/O
  // thread), for an approver that keeps what its approvals did.
  virtual void sent(std::uint64_t /*ticket*/, const FetchResult& /*result*/) {}
};

}  // namespace codemode::gateway
