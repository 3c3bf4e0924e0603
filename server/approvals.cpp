#include "server/approvals.h"

#include <boost/asio/post.hpp>

#include "net/ascii.h"
#include "server/base64.h"
#include "server/tools.h"
#include "server/trace_context.h"

namespace codemode::server {

gateway::Headers code_set_headers(const gateway::Headers& headers) {
  gateway::Headers out;
  for (const auto& header : headers) {
    if (!is_trace_header(header.first)) out.push_back(header);
  }
  return out;
}

std::string question_digest(const gateway::ApprovalRequest& request) {
  return gateway::approval_digest(request.method, request.url, code_set_headers(request.headers),
                                  request.body);
}

std::string approval_message(const gateway::ApprovalRequest& request) {
  std::string text = "Approve this request to the API?\n\n" + request.method + " " + request.url;
  if (!request.summary.empty() || !request.operation_id.empty()) {
    text += "\n" + (request.summary.empty() ? request.operation : request.summary);
    if (!request.operation_id.empty()) text += " (" + request.operation_id + ")";
  }
  // Every header the code set but the one the body line names: a header can change what a
  // write means or where it lands (X-HTTP-Method-Override is dropped; others, such as an
  // account or tenant header, go as they are).
  std::string headers;
  for (const auto& [name, value] : code_set_headers(request.headers)) {
    if (net::iequals(name, "content-type")) continue;
    std::string line = name;
    line += ": ";
    line += value;
    headers += "\n";
    headers += cut_text(line, kApprovalHeaderChars);
  }
  if (!headers.empty()) text += "\n\nHeaders:" + headers;
  if (request.body.empty()) return text + "\n\nNo body.";
  // JSON is shown without the whitespace between its tokens, and otherwise byte for byte: a
  // parsed and re-serialised tree would show one of two repeated keys, or a rounded big number,
  // where the upstream may read the other (and serialising recurses once per level: a body
  // nested a million deep would overflow the stack). Json::accept parses without recursion.
  std::string body;
  if (Json::accept(request.body)) {
    body.reserve(request.body.size());
    bool in_string = false;
    bool escaped = false;
    for (const char c : request.body) {
      if (in_string) {
        if (escaped) {
          escaped = false;
        } else if (c == '\\') {
          escaped = true;
        } else if (c == '"') {
          in_string = false;
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        continue;
      }
      body += c;
    }
  } else {
    body = request.body;
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
  // Settled as unanswerable, not dropped: the gateway then lets go of the request it holds (and
  // its body) now, not when its own timer fires, which may be an hour away.
  if (auto requests = requests_.lock()) requests->settle(id, nullptr);
  // Either side may cancel a request it sent (MCP basic/utilities/cancellation).
  send_(serialize_notification("notifications/cancelled", {{"requestId", id}, {"reason", reason}}));
}

namespace {

std::string text_of(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A recorded response back into what the gateway answers with.
gateway::FetchResult replayed(const Json& entry) {
  if (entry.contains("too_large")) {
    return gateway::GatewayError{
        gateway::ErrorKind::policy,
        "this request was already made, approved, in an earlier round of this call, and its "
        "response (" +
            dump(entry["too_large"]) +
            " bytes) is too large to carry into this one; it is not sent again"};
  }
  if (entry.contains("error")) {
    return gateway::GatewayError{text_of(entry, "error") == "policy" ? gateway::ErrorKind::policy
                                                                     : gateway::ErrorKind::runtime,
                                 text_of(entry, "message")};
  }
  gateway::InboundResponse response;
  response.status = entry.value("status", 0U);
  response.status_text = text_of(entry, "status_text");
  if (const auto headers = entry.find("headers"); headers != entry.end() && headers->is_array()) {
    for (const auto& pair : *headers) {
      if (pair.is_array() && pair.size() == 2 && pair[0].is_string() && pair[1].is_string()) {
        response.headers.emplace_back(pair[0].get<std::string>(), pair[1].get<std::string>());
      }
    }
  }
  response.body = base64_decode(text_of(entry, "body")).value_or(std::string());
  response.final_url = text_of(entry, "final_url");
  response.redirects = entry.value("redirects", 0U);
  return response;
}

// The response bytes (body, header names and values) a done entry carries.
std::size_t carried_bytes(const Json& entry) {
  std::size_t bytes = text_of(entry, "body").size() / 4 * 3;
  if (const auto headers = entry.find("headers"); headers != entry.end() && headers->is_array()) {
    for (const auto& pair : *headers) {
      if (!pair.is_array()) continue;
      for (const auto& part : pair)
        bytes += part.is_string() ? part.get_ref<const std::string&>().size() : 0;
    }
  }
  return bytes;
}

}  // namespace

std::string call_digest(std::string_view tool, std::string_view code) {
  return gateway::approval_digest("tools/call", tool, {}, code);
}

RetryApprover::RetryApprover(std::string call, const Json* state, const Json& responses,
                             std::string by, std::function<void()> stop)
    : call_(std::move(call)), by_(std::move(by)), stop_(std::move(stop)) {
  if (state == nullptr) return;
  if (const auto done = state->find("done"); done != state->end() && done->is_array()) {
    done_ = *done;
  }
  replayed_.assign(done_.size(), false);
  // The bound is on what the state carries, over all rounds: count what it carries in already.
  for (const auto& entry : done_) recorded_bytes_ += carried_bytes(entry);
  if (const auto declined = state->find("declined"); declined != state->end()) {
    for (const auto& digest : *declined) {
      if (digest.is_string()) declined_.push_back(digest.get<std::string>());
    }
  }
  const auto asked = state->find("asked");
  if (asked == state->end() || !asked->is_object() || !responses.is_object()) return;
  for (const auto& [key, digest] : asked->items()) {
    const auto response = responses.find(key);
    if (response == responses.end() || !digest.is_string()) continue;  // asked again
    switch (verdict_of(*response)) {
      case gateway::Verdict::accepted:
        accepted_.push_back(digest.get<std::string>());
        break;
      case gateway::Verdict::declined:
      case gateway::Verdict::cancelled:
        declined_.push_back(digest.get<std::string>());
        break;
      default:
        break;  // not an answer: asked again
    }
  }
}

void RetryApprover::ask(std::uint64_t ticket, const gateway::ApprovalRequest& request,
                        std::function<void(gateway::ApprovalAnswer)> answer) {
  const std::string digest = question_digest(request);
  std::unique_lock lock(mutex_);
  for (std::size_t i = 0; i < replayed_.size(); ++i) {
    if (!replayed_[i] && text_of(done_[i], "d") == digest) {
      replayed_[i] = true;
      gateway::ApprovalAnswer again{gateway::Verdict::accepted, text_of(done_[i], "by"),
                                    replayed(done_[i])};
      lock.unlock();
      return answer(std::move(again));
    }
  }
  if (const auto it = std::find(accepted_.begin(), accepted_.end(), digest);
      it != accepted_.end()) {
    accepted_.erase(it);
    sending_.emplace(ticket, digest);
    lock.unlock();
    return answer({gateway::Verdict::accepted, by_, std::nullopt});
  }
  if (std::find(declined_.begin(), declined_.end(), digest) != declined_.end()) {
    lock.unlock();
    return answer({gateway::Verdict::declined, by_, std::nullopt});
  }
  questions_.push_back(request);
  lock.unlock();
  stop_();  // the call ends here; the retry runs it again with the answer
  answer({gateway::Verdict::deferred, by_, std::nullopt});
}

void RetryApprover::sent(std::uint64_t ticket, const gateway::FetchResult& result) {
  std::lock_guard lock(mutex_);
  const auto it = sending_.find(ticket);
  if (it == sending_.end()) return;
  Json entry{{"d", it->second}, {"by", by_}};
  sending_.erase(it);
  if (const auto* error = std::get_if<gateway::GatewayError>(&result)) {
    entry["error"] = std::string(gateway::to_string(error->kind));
    entry["message"] = error->message;
  } else {
    const auto& response = std::get<gateway::InboundResponse>(result);
    std::size_t bytes = response.body.size();
    Json headers = Json::array();
    for (const auto& [name, value] : response.headers) {
      headers.push_back({name, value});
      bytes += name.size() + value.size();
    }
    if (recorded_bytes_ + bytes > kMaxCarriedResponseBytes) {
      entry["too_large"] = bytes;
    } else {
      recorded_bytes_ += bytes;
      entry["status"] = response.status;
      entry["status_text"] = response.status_text;
      entry["headers"] = std::move(headers);
      entry["body"] = base64_encode(response.body);
      entry["final_url"] = response.final_url;
      entry["redirects"] = response.redirects;
    }
  }
  done_.push_back(std::move(entry));
}

bool RetryApprover::stopped_for_input() const {
  std::lock_guard lock(mutex_);
  return !questions_.empty();
}

Json RetryApprover::input_requests() const {
  std::lock_guard lock(mutex_);
  Json requests = Json::object();
  for (std::size_t i = 0; i < questions_.size(); ++i) {
    requests["approval-" + std::to_string(i + 1)] = {
        {"method", "elicitation/create"}, {"params", approval_elicitation(questions_[i], true)}};
  }
  return requests;
}

Json RetryApprover::next_state() const {
  std::lock_guard lock(mutex_);
  Json asked = Json::object();
  for (std::size_t i = 0; i < questions_.size(); ++i) {
    asked["approval-" + std::to_string(i + 1)] = question_digest(questions_[i]);
  }
  // A request approved and sent whose answer had not come when the call stopped (the code went
  // on and reached another question meanwhile) may have reached the upstream: it counts as made,
  // with no response to give back, so no later round sends it again.
  Json done = done_;
  for (const auto& [ticket, digest] : sending_) {
    done.push_back({{"d", digest},
                    {"by", by_},
                    {"error", "runtime"},
                    {"message",
                     "this request was sent, approved, in an earlier round of this call, which "
                     "stopped before its response came; it is not sent again"}});
  }
  return Json{{"call", call_},
              {"asked", std::move(asked)},
              {"done", std::move(done)},
              {"declined", declined_}};
}

}  // namespace codemode::server
