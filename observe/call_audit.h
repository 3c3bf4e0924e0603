// The server's side of the audit trail (audit/README.md): it fills in one audit::CallRecord per
// tools/call (McpSession) and one audit::RequestRecord per request a call's code makes through
// the gateway (a FetchObserver: fetch_observer.h), and hands them to the
// audit::Writer, whose thread stores them.
//
// What a record may hold is decided here: names, sizes, times, the code, the method, origin
// and path of a request and the gateway's refusal. Never a header, a body, a bearer token or an
// Mcp-Session-Id (which is a session's credential): a session is named by its transport and a
// count ("http-7").
//
// Threading: built once by the daemon, read-only afterwards; refusal() and the wrapped
// fetchers may run on any thread (the Writer's admit() and record() are thread-safe).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "audit/writer.h"
#include "channel/call_control.h"
#include "gateway/operation_policy.h"
#include "gateway/url_policy.h"
#include "observe/fetch_observer.h"

namespace codemode::server {

class CallAudit : public FetchObserver {
 public:
  // `operations`: every operation the API description declares, to name the one a request
  // matched (whatever `policy.operations` enforces). `urls`: the gateway's own policy, so a
  // request's origin and path are written as the gateway normalised them.
  CallAudit(audit::Writer& writer, gateway::OperationPolicy operations,
            const gateway::UrlPolicy& urls);

  // Why a new call of `principal` may not start now (on_failure fail_closed: the store is down,
  // the queue is full, or the principal holds its whole share of it), as the JSON-RPC error's
  // message ("unavailable: ..."); nullopt when it may.
  std::optional<std::string> refusal(std::string_view principal) const;

  void record(audit::Record record) { writer_.record(std::move(record)); }

  // Every fetch of a call that has an audit id is recorded when it completes (observe_fetches,
  // fetch_observer.h).
  void on_answer(const ObservedCall& call, const ObservedFetch& fetch,
                 const gateway::FetchResult& result) override;

  // A name for a session in the records: "stdio-1", "http-7" (a count per process).
  static std::string session_name(std::string_view transport);

 private:
  audit::Writer& writer_;
  const gateway::OperationPolicy operations_;
  const gateway::UrlPolicy& urls_;
};

}  // namespace codemode::server
