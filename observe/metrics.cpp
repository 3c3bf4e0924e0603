#include "observe/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <variant>

namespace codemode::server {

namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

// Call times from a hello (~1 ms in the server) to a call at its wall limit (tens of seconds).
const Histogram::BucketBoundaries call_seconds{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                               0.25,  0.5,    1,     2.5,  5,     10,   30};
// Queue waits and CPU: mostly well under a millisecond, the tail up to the limits.
const Histogram::BucketBoundaries short_seconds{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                0.025,  0.05,    0.1,    0.5,   1,      5};

// The origin of an absolute http(s) URL ("http://127.0.0.1:8788"), or empty.
std::string_view origin_of(std::string_view url) {
  const auto scheme = url.find("://");
  if (scheme == std::string_view::npos) return {};
  const auto end = url.find('/', scheme + 3);
  return url.substr(0, end);
}

}  // namespace

std::string_view refusal_reason(std::string_view message) {
  auto starts = [&](std::string_view prefix) { return message.rfind(prefix, 0) == 0; };
  if (starts("origin ")) return "origin";
  if (starts("method ") || message.find(" request cannot have a body") != std::string_view::npos)
    return "method";
  if (message.find("matches no operation") != std::string_view::npos) return "operation";
  if (starts("subrequest limit")) return "budget";
  if (starts("header ") || starts("request headers") || starts("more than ") ||
      starts("empty header name"))
    return "header";
  if (starts("request body")) return "body";
  if (starts("URL ") || message.find("URL") != std::string_view::npos) return "url";
  return "other";
}

struct Metrics::Families {
  explicit Families(prometheus::Registry& registry)
      : calls(BuildCounter()
                  .Name("codemode_tool_calls_total")
                  .Help("Tool calls answered, by tool and outcome (ok or the error kind)")
                  .Register(registry)),
        duration(BuildHistogram()
                     .Name("codemode_tool_call_duration_seconds")
                     .Help("Time from a tools/call request to its answer, in the server")
                     .Register(registry)),
        queue(BuildHistogram()
                  .Name("codemode_tool_call_queue_seconds")
                  .Help("Time a call waited for a sandbox process before it started")
                  .Register(registry)),
        cpu(BuildHistogram()
                .Name("codemode_tool_call_cpu_seconds")
                .Help("CPU time of a call's own thread in its sandbox process")
                .Register(registry)),
        running(BuildGauge()
                    .Name("codemode_tool_calls_running")
                    .Help("Calls running in sandbox processes now")
                    .Register(registry)
                    .Add({})),
        queued(BuildGauge()
                   .Name("codemode_tool_calls_queued")
                   .Help("Calls waiting for a sandbox process now")
                   .Register(registry)
                   .Add({})),
        processes(BuildGauge()
                      .Name("codemode_sandbox_processes")
                      .Help("Sandbox processes alive now, owned and spare")
                      .Register(registry)
                      .Add({})),
        starting(BuildGauge()
                     .Name("codemode_sandbox_processes_starting")
                     .Help("Sandbox processes being started now")
                     .Register(registry)
                     .Add({})),
        started(BuildCounter()
                    .Name("codemode_sandbox_processes_started_total")
                    .Help("Sandbox processes started since the server began")
                    .Register(registry)
                    .Add({})),
        retired(BuildCounter()
                    .Name("codemode_sandbox_processes_retired_total")
                    .Help("Sandbox processes retired since the server began, by reason (idle, "
                          "lifetime, failed, room)")
                    .Register(registry)),
        requests(BuildCounter()
                     .Name("codemode_gateway_requests_total")
                     .Help("Requests the gateway sent for execute code, by upstream and status "
                           "class (failed: no response)")
                     .Register(registry)),
        refusals(BuildCounter()
                     .Name("codemode_gateway_refusals_total")
                     .Help("Requests the gateway refused, by reason")
                     .Register(registry)),
        request_duration(BuildHistogram()
                             .Name("codemode_gateway_request_duration_seconds")
                             .Help("Time from a fetch() reaching the gateway to its answer")
                             .Register(registry)),
        bytes(BuildCounter()
                  .Name("codemode_gateway_bytes_total")
                  .Help("Body bytes through the gateway: sent (requests), received (responses)")
                  .Register(registry)),
        sent(bytes.Add({{"direction", "sent"}})),
        received(bytes.Add({{"direction", "received"}})),
        audit_queue(BuildGauge()
                        .Name("codemode_audit_queue_depth")
                        .Help("Audit records waiting for the store")
                        .Register(registry)),
        audit_dropped(BuildCounter()
                          .Name("codemode_audit_records_dropped_total")
                          .Help("Audit records dropped because the store was down or slow")
                          .Register(registry)),
        spans_dropped(BuildCounter()
                          .Name("codemode_trace_spans_dropped_total")
                          .Help("Spans dropped: the export queue was full, or the collector did "
                                "not take them")
                          .Register(registry)),
        export_failures(BuildCounter()
                            .Name("codemode_trace_export_failures_total")
                            .Help("Span batches the OTLP collector did not accept (no answer, "
                                  "or a status other than 2xx)")
                            .Register(registry)) {}

  Family<Counter>& calls;
  Family<Histogram>& duration;
  Family<Histogram>& queue;
  Family<Histogram>& cpu;
  Gauge& running;
  Gauge& queued;
  Gauge& processes;
  Gauge& starting;
  // Counters the pool keeps: each scrape adds what they grew by since the last.
  Counter& started;
  Family<Counter>& retired;
  Family<Counter>& requests;
  Family<Counter>& refusals;
  Family<Histogram>& request_duration;
  Family<Counter>& bytes;
  Counter& sent;
  Counter& received;
  Family<Gauge>& audit_queue;
  Family<Counter>& audit_dropped;
  Family<Counter>& spans_dropped;
  Family<Counter>& export_failures;
};

namespace {

// Brings `counter` up to `total`, a count kept elsewhere that only grows.
void catch_up(Counter& counter, std::uint64_t total) {
  const double now = static_cast<double>(total);
  if (now > counter.Value()) counter.Increment(now - counter.Value());
}

}  // namespace

Metrics::Metrics(std::vector<std::string> upstreams)
    : upstreams_(std::move(upstreams)),
      registry_(std::make_shared<prometheus::Registry>()),
      families_(std::make_unique<Families>(*registry_)) {}

Metrics::~Metrics() = default;

void Metrics::call_finished(channel::Tool tool, const channel::Outcome& outcome, double seconds) {
  const std::string name(channel::to_string(tool));
  const std::string kind(outcome.ok ? "ok" : channel::to_string(outcome.error_kind));
  families_->calls.Add({{"tool", name}, {"outcome", kind}}).Increment();
  families_->duration.Add({{"tool", name}}, call_seconds).Observe(seconds);
  if (outcome.sandbox_us > 0 || outcome.queued_us > 0) {
    families_->queue.Add({{"tool", name}}, short_seconds)
        .Observe(static_cast<double>(outcome.queued_us) / 1e6);
  }
  if (outcome.sandbox_us > 0) {
    families_->cpu.Add({{"tool", name}}, short_seconds)
        .Observe(static_cast<double>(outcome.cpu_us) / 1e6);
  }
}

void Metrics::request_finished(std::string_view url, std::size_t sent_bytes,
                               const gateway::FetchResult& result, double seconds) {
  if (const auto* error = std::get_if<gateway::GatewayError>(&result)) {
    if (error->kind == gateway::ErrorKind::policy) {
      families_->refusals.Add({{"reason", std::string(refusal_reason(error->message))}})
          .Increment();
      return;
    }
  }
  // Sent: the upstream is the response's origin, or the first upstream's for a relative URL.
  std::string upstream = "other";
  const auto* response = std::get_if<gateway::InboundResponse>(&result);
  std::string_view origin = origin_of(response != nullptr ? response->final_url : url);
  if (origin.empty() && !upstreams_.empty()) origin = upstreams_.front();
  if (std::find(upstreams_.begin(), upstreams_.end(), origin) != upstreams_.end()) {
    upstream = std::string(origin);
  }
  std::string status = "failed";
  if (response != nullptr && response->status >= 100 && response->status <= 599) {
    status = std::to_string(response->status / 100) + "xx";
  }
  families_->requests.Add({{"upstream", upstream}, {"status", status}}).Increment();
  families_->request_duration.Add({{"upstream", upstream}}, call_seconds).Observe(seconds);
  families_->sent.Increment(static_cast<double>(sent_bytes));
  if (response != nullptr)
    families_->received.Increment(static_cast<double>(response->body.size()));
}

void Metrics::on_answer(const ObservedCall&, const ObservedFetch& fetch,
                        const gateway::FetchResult& result) {
  request_finished(fetch.url, fetch.sent_bytes, result, fetch.seconds);
}

std::string Metrics::exposition() {
  if (levels_) {
    const Levels levels = levels_();
    families_->running.Set(static_cast<double>(levels.pool.running));
    families_->queued.Set(static_cast<double>(levels.pool.queued));
    families_->processes.Set(static_cast<double>(levels.pool.processes));
    families_->starting.Set(static_cast<double>(levels.pool.starting));
    catch_up(families_->started, levels.pool.started);
    for (const char* reason : {"idle", "lifetime", "failed", "room"}) {
      const auto it = levels.pool.retired.find(reason);
      catch_up(families_->retired.Add({{"reason", reason}}),
               it == levels.pool.retired.end() ? 0 : it->second);
    }
    if (levels.audit) {
      families_->audit_queue.Add({}).Set(static_cast<double>(levels.audit_queue));
      catch_up(families_->audit_dropped.Add({}), levels.audit_dropped);
    }
    if (levels.tracing) {
      catch_up(families_->spans_dropped.Add({}), levels.spans_dropped);
      catch_up(families_->export_failures.Add({}), levels.span_export_failures);
    }
  }
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace codemode::server
