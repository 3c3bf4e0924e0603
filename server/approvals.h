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
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "gateway/approval.h"
#include "server/json_rpc.h"

namespace codemode::server {

// How much of a request body the question shows (characters); the rest is counted.
inline constexpr std::size_t kApprovalBodyChars = 2000;

// The text a person reads: method and URL, the operation's summary and id, and the body
// (compact JSON when it is JSON), cut to kApprovalBodyChars.
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
  void drop(const Json& id);
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
  // The call ended (on the session's executor): every open question is withdrawn, and later
  // ones are answered `impossible` at once.
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

}  // namespace codemode::server
