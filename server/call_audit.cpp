#include "server/call_audit.h"

#include <atomic>
#include <chrono>
#include <memory>

#include "gateway/request_check.h"
#include "net/ascii.h"

namespace codemode::server {

namespace {

// A URL the gateway refused is written as the code gave it, cut: it never held a credential
// of ours (the gateway adds those as headers), but it may be long.
constexpr std::size_t kMaxRefusedUrl = 2048;

bool is_lower_hex(std::string_view text) {
  return text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

}  // namespace

CallAudit::CallAudit(audit::Writer& writer, gateway::OperationPolicy operations,
                     const gateway::UrlPolicy& urls)
    : writer_(writer), operations_(std::move(operations)), urls_(urls) {}

std::string CallAudit::session_name(std::string_view transport) {
  static std::atomic<std::uint64_t> sessions{0};
  return std::string(transport) + "-" + std::to_string(++sessions);
}

std::string CallAudit::trace_id(std::string_view traceparent) {
  // version "-" trace-id "-" parent-id "-" flags; an all-zero trace id is invalid.
  if (traceparent.size() != 55 || traceparent[2] != '-' || traceparent[35] != '-' ||
      traceparent[52] != '-') {
    return "";
  }
  const std::string_view id = traceparent.substr(3, 32);
  if (!is_lower_hex(traceparent.substr(0, 2)) || !is_lower_hex(id) ||
      !is_lower_hex(traceparent.substr(36, 16)) || !is_lower_hex(traceparent.substr(53, 2)) ||
      id == std::string(32, '0')) {
    return "";
  }
  return std::string(id);
}

sandbox::FetcherFactory CallAudit::recording(sandbox::FetcherFactory inner) const {
  return [this, inner = std::move(inner)](const config::Limits& limits,
                                          const sandbox::Call& call) -> sandbox::Fetcher {
    sandbox::Fetcher fetch = inner(limits, call);
    if (call.audit_id.empty() || !fetch) return fetch;
    return [this, fetch = std::move(fetch), call_id = call.audit_id, principal = call.principal](
               gateway::OutboundRequest request, std::function<void(gateway::FetchResult)> done) {
      auto record = std::make_shared<audit::RequestRecord>();
      record->call_id = call_id;
      record->principal = principal;
      record->time_us = audit::now_us();
      for (char c : request.method) {
        record->method += net::is_alpha(c) ? static_cast<char>(c & ~0x20) : c;
      }
      record->bytes_sent = request.body.size();
      const gateway::PolicyDecision decision = urls_.decide(request.url);
      if (const auto* allowed = std::get_if<gateway::Allowed>(&decision)) {
        record->origin = allowed->url.origin;
        record->path = allowed->url.target;
        if (const auto method = gateway::parse_method(record->method)) {
          record->operation = operations_.operation_of(*method, record->path).value_or("");
        }
      } else {
        record->path = request.url.substr(0, kMaxRefusedUrl);
      }
      const auto started = std::chrono::steady_clock::now();
      fetch(std::move(request),
            [this, record, started, done = std::move(done)](gateway::FetchResult result) {
              record->duration_us =
                  static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                 std::chrono::steady_clock::now() - started)
                                                 .count());
              if (const auto* response = std::get_if<gateway::InboundResponse>(&result)) {
                record->status = response->status;
                record->bytes_received = response->body.size();
              } else {
                record->refusal = std::get<gateway::GatewayError>(result).text();
              }
              writer_.record(std::move(*record));
              done(std::move(result));
            });
    };
  };
}

}  // namespace codemode::server
