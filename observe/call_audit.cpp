#include "observe/call_audit.h"

#include <atomic>

#include "gateway/request_check.h"
#include "net/ascii.h"

namespace codemode::server {

namespace {

// A URL the gateway refused is written as the code gave it, cut on a character boundary: it never
// held a credential of ours (the gateway adds those as headers), but it may be long.
constexpr std::size_t kMaxRefusedUrl = 2048;

}  // namespace

CallAudit::CallAudit(audit::Writer& writer, gateway::OperationPolicy operations,
                     const gateway::UrlPolicy& urls)
    : writer_(writer), operations_(std::move(operations)), urls_(urls) {}

std::optional<std::string> CallAudit::refusal(std::string_view principal) const {
  std::string_view why;
  switch (writer_.admit(principal)) {
    case audit::Admission::admitted:
      return std::nullopt;
    case audit::Admission::store_down:
      why = "its store is down";
      break;
    case audit::Admission::queue_full:
      why = "its queue is full";
      break;
    case audit::Admission::share_full:
      why = "this principal's share of its queue is full";
      break;
  }
  return "unavailable: the audit trail cannot record calls now (" + std::string(why) +
         "); retry later";
}

std::string CallAudit::session_name(std::string_view transport) {
  static std::atomic<std::uint64_t> sessions{0};
  return std::string(transport) + "-" + std::to_string(++sessions);
}

void CallAudit::on_answer(const ObservedCall& call, const ObservedFetch& fetch,
                          const gateway::FetchResult& result) {
  if (call.audit_id.empty()) return;
  // Past the call's bound on refused requests, the bound's first refusal was recorded and stands
  // for the rest (gateway::GatewayError::repeated): ~6,000 of them in one call would otherwise
  // be as many records.
  if (const auto* error = std::get_if<gateway::GatewayError>(&result); error && error->repeated) {
    return;
  }
  audit::RequestRecord record;
  record.call_id = call.audit_id;
  record.principal = call.principal;
  record.time_us = fetch.started_unix_us;
  for (char c : fetch.method) record.method += net::is_alpha(c) ? static_cast<char>(c & ~0x20) : c;
  record.bytes_sent = fetch.sent_bytes;
  const gateway::PolicyDecision decision = urls_.decide(fetch.url);
  if (const auto* allowed = std::get_if<gateway::Allowed>(&decision)) {
    record.origin = allowed->url.origin;
    record.path = allowed->url.target;
    if (const auto method = gateway::parse_method(record.method)) {
      record.operation = operations_.operation_of(*method, record.path).value_or("");
    }
  } else {
    record.path = audit::utf8_prefix(fetch.url, kMaxRefusedUrl);
  }
  record.duration_us = static_cast<std::uint64_t>(fetch.seconds * 1e6);
  if (const auto* response = std::get_if<gateway::InboundResponse>(&result)) {
    record.status = response->status;
    record.bytes_received = response->body.size();
    record.approved_by = response->approved_by;
  } else {
    record.refusal = std::get<gateway::GatewayError>(result).text();
  }
  writer_.record(std::move(record));
}

}  // namespace codemode::server
