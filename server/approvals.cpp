#include "server/approvals.h"

#include <boost/asio/post.hpp>

#include "server/tools.h"

namespace codemode::server {

std::string approval_message(const gateway::ApprovalRequest& request) {
  std::string text = "Approve this request to the API?\n\n" + request.method + " " + request.url;
  if (!request.summary.empty() || !request.operation_id.empty()) {
    text += "\n" + (request.summary.empty() ? request.operation : request.summary);
    if (!request.operation_id.empty()) text += " (" + request.operation_id + ")";
  }
  if (request.body.empty()) return text + "\n\nNo body.";
  std::string body = request.body;
  if (const Json parsed = Json::parse(body, nullptr, false); !parsed.is_discarded()) {
    body = dump(parsed);  // compact
  }
  text += "\n\nBody";
  if (!request.content_type.empty()) text += " (" + request.content_type + ")";
  text +=
      ", " + std::to_string(request.body.size()) + " bytes:\n" + cut_text(body, kApprovalBodyChars);
  return text;
}

Json approval_elicitation(const gateway::ApprovalRequest& request, bool with_mode) {
  Json params{{"message", approval_message(request)},
              {"requestedSchema", {{"type", "object"}, {"properties", Json::object()}}}};
  if (with_mode) params["mode"] = "form";
  return params;
}

gateway::Verdict verdict_of(const Json& result) {
  if (!result.is_object()) return gateway::Verdict::impossible;
  const auto action = result.find("action");
  if (action == result.end() || !action->is_string()) return gateway::Verdict::impossible;
  if (*action == "accept") return gateway::Verdict::accepted;
  if (*action == "decline") return gateway::Verdict::declined;
  if (*action == "cancel") return gateway::Verdict::cancelled;
  return gateway::Verdict::impossible;
}

Json ServerRequests::add(Answer answer) {
  // A string the client cannot confuse with its own ids, which are ours to echo.
  Json id = "codemode-approval-" + std::to_string(++last_);
  waiting_.emplace(id.get<std::string>(), std::move(answer));
  return id;
}

bool ServerRequests::settle(const Json& id, const Json* result) {
  if (!id.is_string()) return false;
  const auto it = waiting_.find(id.get<std::string>());
  if (it == waiting_.end()) return false;
  Answer answer = std::move(it->second);
  waiting_.erase(it);
  answer(result);
  return true;
}

void ServerRequests::drop(const Json& id) {
  if (id.is_string()) waiting_.erase(id.get<std::string>());
}

ElicitingApprover::ElicitingApprover(boost::asio::any_io_executor executor,
                                     std::weak_ptr<ServerRequests> requests, Send send,
                                     std::string by, bool with_mode)
    : executor_(std::move(executor)),
      requests_(std::move(requests)),
      send_(std::move(send)),
      by_(std::move(by)),
      with_mode_(with_mode) {}

void ElicitingApprover::ask(std::uint64_t ticket, const gateway::ApprovalRequest& request,
                            std::function<void(gateway::ApprovalAnswer)> answer) {
  boost::asio::post(executor_, [self = shared_from_this(), ticket,
                                params = approval_elicitation(request, with_mode_),
                                answer = std::move(answer)]() mutable {
    auto requests = self->requests_.lock();
    if (self->closed_ || !requests) return answer({gateway::Verdict::impossible, self->by_});
    Json id = requests->add([self, ticket, answer](const Json* result) {
      self->open_.erase(ticket);
      answer({result ? verdict_of(*result) : gateway::Verdict::impossible, self->by_});
    });
    self->open_.emplace(ticket, id);
    Json message{{"jsonrpc", "2.0"},
                 {"id", id},
                 {"method", "elicitation/create"},
                 {"params", std::move(params)}};
    self->send_(dump(message));
  });
}

void ElicitingApprover::withdraw(std::uint64_t ticket) {
  boost::asio::post(executor_, [self = shared_from_this(), ticket] {
    self->take_back(ticket, "the approval timed out");
  });
}

void ElicitingApprover::close() {
  closed_ = true;
  while (!open_.empty()) take_back(open_.begin()->first, "the call ended");
}

void ElicitingApprover::take_back(std::uint64_t ticket, const char* reason) {
  const auto it = open_.find(ticket);
  if (it == open_.end()) return;
  const Json id = it->second;
  open_.erase(it);
  if (auto requests = requests_.lock()) requests->drop(id);
  // Either side may cancel a request it sent (MCP basic/utilities/cancellation).
  send_(serialize_notification("notifications/cancelled", {{"requestId", id}, {"reason", reason}}));
}

}  // namespace codemode::server
