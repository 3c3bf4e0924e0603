// Asking an MCP client's user to approve one of execute's requests (config policy.approve;
// README.md, "Approvals"): the gateway decides which requests wait (gateway/approval.h); this is
// how a session asks.
//
// MCP 2025-06-18 and later (a session whose client declared the `elicitation` capability): an
// `elicitation/create` request in form mode goes to the client during the call, on the call's
// own channel (the SSE stream of the HTTP POST that carried the call, or a stdio line); the
// client's response comes back as a JSON-RPC response and settles the question. The form has no
// fields: accept approves, decline and cancel do not.
//
// Threading: everything runs on the session's executor; ask() and withdraw() may be called from
// any thread and post there.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "gateway/approval.h"
#include "mcp/json_rpc.h"

namespace codemode::server {

// How much of a request body the question shows (characters); the rest is counted.
inline constexpr std::size_t kApprovalBodyChars = 2000;
// How much of one header line ("Name: value") it shows.
inline constexpr std::size_t kApprovalHeaderChars = 200;

// `headers` of a request without the ones the host put on it before the gateway asked: the
// trace context (trace_context.h: the tracer drops the code's own and adds the call's, with a
// new span id per request). What is left is what the code set, and only that is shown to a
// person or bound by an approval: a header that changes every round would make a 2026-07-28
// retry ask again for ever.
gateway::Headers code_set_headers(const gateway::Headers& headers);

// What an approval binds to: gateway::approval_digest over method, URL, code_set_headers and
// body. (ApprovalRequest::digest also covers the host's trace context.)
std::string question_digest(const gateway::ApprovalRequest& request);

// Why a person cannot read the request's body as the upstream will (a Content-Encoding other
// than identity: the upstream inflates what the person would see as compressed bytes); nullopt
// when they can. Such a request is never asked about: the approvers answer `impossible` at once,
// with this reason in `by` for the log, so it fails closed.
std::optional<std::string> unreadable_body(const gateway::ApprovalRequest& request);

// The text a person reads; what it shows is what is sent, and where it cannot show all of it,
// it says so:
//   - method and URL, the operation's summary and id, the headers the code set (each line cut
//     to kApprovalHeaderChars, saying how many bytes are not shown);
//   - a warning naming every key a JSON body gives more than once in one object, wherever in
//     the body it is (servers differ on which value they take);
//   - the body: JSON without the whitespace between its tokens, anything else byte for byte,
//     cut to kApprovalBodyChars; the line before it says how many bytes are not shown (the
//     approval covers all of them), so nothing in the body can pose as what the server says.
// Nothing reaches the person raw that is not visible text: control characters (ESC, CR, ...),
// C1 controls, bidi controls, zero-width and tag characters and bytes that are not UTF-8 are
// written as escapes: inside a JSON string as JSON's own (`\u202e`, meaning the same to a JSON
// reader), elsewhere as `\xNN` or `\u{XXXX}`, with a backslash itself doubled.
std::string approval_message(const gateway::ApprovalRequest& request);

// The params of the elicitation/create that asks about `request`. `with_mode`: the client speaks
// 2025-11-25 or later, where the request names its mode ("form").
Json approval_elicitation(const gateway::ApprovalRequest& request, bool with_mode);

// What an ElicitResult (`{"action": "accept" | "decline" | "cancel"}`) means for the request.
gateway::Verdict verdict_of(const Json& result);

// The requests a session has sent its client and waits to hear about. On the session's executor.
class ServerRequests {
 public:
  // `result`: the response's result, or null when the client answered with an error.
  using Answer = std::function<void(const Json* result)>;

  // Registers `answer` and returns the id the request goes out with.
  Json add(Answer answer);
  // A response came: its answer runs (once). False when the id is not waited for.
  bool settle(const Json& id, const Json* result);
  std::size_t size() const { return waiting_.size(); }

 private:
  std::uint64_t last_ = 0;
  std::map<std::string, Answer> waiting_;  // by dumped id
};

// The Approver of one call whose client can ask its user (elicitation). Built by the session
// for each execute call; close() when the call ends takes back the questions still open.
class ElicitingApprover final : public gateway::Approver,
                                public std::enable_shared_from_this<ElicitingApprover> {
 public:
  using Send = std::function<void(std::string message)>;

  // `send`: the call's channel to the client. `by`: who answers, for the log and audit trail.
  ElicitingApprover(boost::asio::any_io_executor executor, std::weak_ptr<ServerRequests> requests,
                    Send send, std::string by, bool with_mode);

  void ask(std::uint64_t ticket, const gateway::ApprovalRequest& request,
           std::function<void(gateway::ApprovalAnswer)> answer) override;
  void withdraw(std::uint64_t ticket) override;
  // The call ended (on the session's executor): every open question is withdrawn and answered
  // `impossible` (so the gateway lets go of its request now), and later ones are answered
  // `impossible` at once.
  void close();

 private:
  void take_back(std::uint64_t ticket, const char* reason);

  boost::asio::any_io_executor executor_;
  std::weak_ptr<ServerRequests> requests_;
  Send send_;
  const std::string by_;
  const bool with_mode_;
  std::map<std::uint64_t, Json> open_;  // ticket -> the request's id
  bool closed_ = false;
};

// The Approver of one execute call of MCP 2026-07-28, which has no requests from server to
// client: a call that needs an answer it does not have is stopped (`stop`), and the client gets
// an InputRequiredResult with the questions and a sealed requestState (request_state.h). The
// client sends the call again with the answers; the code runs again from the start, in a fresh
// isolate, and:
//   - a request identical (method, URL, the headers the code set, body: question_digest) to one
//     the user accepted is sent, once;
//   - one identical to one the user declined or dismissed is refused, as in a session;
//   - one identical to a request already made, approved, in an earlier round gets that round's
//     response again and is not sent again (so each round can go further than the last);
//   - any other that needs approval is asked about, and the call stops again.
// Thread-safe: the gateway calls it on its I/O thread, the session reads it after the call.
class RetryApprover final : public gateway::Approver {
 public:
  // `call`: the call's call_digest(). `state`: the opened requestState of a retry (null on a
  // first call; its `call` already checked), `responses`: the retry's inputResponses. `by`: who
  // answers. `stop`: ends the call.
  RetryApprover(std::string call, const Json* state, const Json& responses, std::string by,
                std::function<void()> stop);

  void ask(std::uint64_t ticket, const gateway::ApprovalRequest& request,
           std::function<void(gateway::ApprovalAnswer)> answer) override;
  void withdraw(std::uint64_t /*ticket*/) override {}
  void sent(std::uint64_t ticket, const gateway::FetchResult& result) override;

  // After the call: whether it stopped for questions; then the result's inputRequests, and the
  // state to seal for the retry (the requests already made, the answers given, the questions).
  bool stopped_for_input() const;
  Json input_requests() const;
  Json next_state() const;

 private:
  mutable std::mutex mutex_;
  const std::string call_;
  const std::string by_;
  std::function<void()> stop_;
  std::vector<std::string> accepted_;  // digests, each good for one request
  std::vector<std::string> declined_;
  Json done_ = Json::array();   // requests made in earlier rounds and this one, in order
  std::vector<bool> replayed_;  // per done_ entry of earlier rounds: given back this round
  std::map<std::uint64_t, std::string> sending_;  // ticket -> digest, approved and being sent
  std::vector<gateway::ApprovalRequest> questions_;
  std::size_t recorded_bytes_ = 0;
};

// How much of the responses of approved requests a requestState carries for the next round.
inline constexpr std::size_t kMaxCarriedResponseBytes = 65536;

// A digest naming one tools/call: its tool and code (what a requestState is bound to).
std::string call_digest(std::string_view tool, std::string_view code);

}  // namespace codemode::server
