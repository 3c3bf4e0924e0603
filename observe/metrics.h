// The server's Prometheus metrics: what operators graph and alert on. Served as the text
// exposition format at GET /metrics on the HTTP listener (bearer-protected like /mcp) or on a
// listener of its own (--metrics HOST:PORT), through prometheus-cpp's registry and serializer.
//
// Counters and histograms are updated from the daemon's I/O thread as calls and requests end;
// levels (calls running and queued, sandbox processes) are read from the sandbox's pool when a
// scrape comes, on the same thread. prometheus-cpp's metrics are thread-safe either way.
//
// Names (README.md, "Metrics"), all prefixed codemode_:
//   tool_calls_total{tool,outcome}            outcome: ok, input, compile, runtime, timeout,
//                                             memory, policy
//   tool_call_duration_seconds{tool}          from the request to the answer, in the server
//   tool_call_queue_seconds{tool}             waiting for a sandbox process
//   tool_call_cpu_seconds{tool}               CPU of the call's own thread
//   tool_calls_running, tool_calls_queued     now
//   sandbox_processes, sandbox_processes_starting                          now
//   sandbox_processes_started_total, sandbox_processes_retired_total{reason}
//   gateway_requests_total{upstream,status}   status: 2xx…5xx, or failed (no response)
//   gateway_refusals_total{reason}            origin, method, operation, budget, header, body,
//                                             url, other
//   gateway_request_duration_seconds{upstream}
//   gateway_bytes_total{direction}            sent (request bodies), received (response bodies)
//   audit_queue_depth, audit_records_dropped_total (when an audit store is configured)
//   trace_spans_dropped_total, trace_export_failures_total (when spans are exported)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "channel/call_control.h"
#include "channel/outcome.h"
#include "gateway/request.h"
#include "observe/fetch_observer.h"
#include "sandbox/call.h"
#include "sandbox/process_pool.h"

namespace prometheus {
class Registry;
}

namespace codemode::server {

class Metrics : public FetchObserver {
 public:
  // `upstreams`: the configured origins, the only values of the `upstream` label besides
  // "other" (so a label never grows with what the code asks for).
  explicit Metrics(std::vector<std::string> upstreams);
  ~Metrics() override;
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // One tools/call answered: its tool, its outcome and its time in the server.
  void call_finished(channel::Tool tool, const channel::Outcome& outcome, double seconds);

  // One fetch() of an execute call answered by the gateway: the URL the code asked for, the
  // bytes of its body, the answer.
  void request_finished(std::string_view url, std::size_t sent_bytes,
                        const gateway::FetchResult& result, double seconds);

  // Every fetch is counted when the gateway answers it (observe_fetches, fetch_observer.h).
  void on_answer(const ObservedCall& call, const ObservedFetch& fetch,
                 const gateway::FetchResult& result) override;

  // Where scrapes read the levels: the pool's, and the audit writer's (depth, dropped so far).
  struct Levels {
    sandbox::PoolStats pool;
    bool audit = false;
    std::uint64_t audit_queue = 0;
    std::uint64_t audit_dropped = 0;
    bool tracing = false;  // spans are exported (tracing.h)
    std::uint64_t spans_dropped = 0;
    std::uint64_t span_export_failures = 0;
  };
  void set_levels(std::function<Levels()> levels) { levels_ = std::move(levels); }

  // The text exposition format (version 0.0.4), levels read now.
  std::string exposition();

  // Content-Type of exposition().
  static constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

 private:
  struct Families;
  std::vector<std::string> upstreams_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> families_;
  std::function<Levels()> levels_;
};

// The reason label of a gateway refusal, from its message (messages start with what was
// refused: "origin … is not allowed", "method …", "subrequest limit …").
std::string_view refusal_reason(std::string_view message);

}  // namespace codemode::server
