// Traces (README.md, "Traces"): a SERVER span per tools/call and a CLIENT span per request its
// code makes through the gateway, following the OpenTelemetry MCP, GenAI and HTTP semantic
// conventions, exported to a collector over OTLP/HTTP in its JSON encoding; and the W3C
// `traceparent` each upstream request carries (trace_context.h).
//
// Tracer decides what a call's trace is (the one it came with, a new one when spans are
// exported, or none), builds the spans and puts the host's `traceparent` on every request (a
// FetchObserver, fetch_observer.h). SpanExporter owns the queue and the thread that sends them.
//
// Never on a call's path: a finished span goes into a bounded queue (full: dropped and
// counted); the exporter's thread batches and sends it with the gateway's HTTP client on an
// io_context of its own, so a collector that is down or slow costs calls nothing. The
// collector's URL is operator config: the gateway's allowlist does not apply to it, and the
// headers sent to it are never logged.
//
// Threading: Tracer is built once by the daemon and read-only afterwards; its functions run on
// any thread. SpanExporter::add and stats may be called from any thread; stop() from one.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "channel/outcome.h"
#include "config/config.h"
#include "gateway/url_policy.h"
#include "observe/fetch_observer.h"
#include "observe/trace_context.h"

namespace codemode::server {

// OTLP's span kinds (the protobuf enum values).
enum class SpanKind { server = 2, client = 3 };

using AttributeValue = std::variant<std::string, std::int64_t>;

// A finished span, as OTLP carries it.
struct Span {
  std::string trace_id;        // 32 lower-case hex
  std::string span_id;         // 16 lower-case hex
  std::string parent_span_id;  // empty: a root span
  std::string name;
  SpanKind kind = SpanKind::server;
  std::int64_t start_unix_us = 0;
  std::int64_t end_unix_us = 0;
  bool error = false;  // status ERROR (else UNSET)
  std::string status_message;
  std::vector<std::pair<std::string, AttributeValue>> attributes;
};

// The OTLP/HTTP JSON body of `spans` ({"resourceSpans": [...]}): ids as hex strings, times as
// decimal strings of nanoseconds, integer attributes as intValue strings. Text that is not valid
// UTF-8 (a URL the code wrote) is written with U+FFFD in its place.
std::string otlp_json(const std::vector<Span>& spans, std::string_view service_name,
                      std::string_view service_version);

// Sends spans to the collector from a thread of its own.
class SpanExporter {
 public:
  static constexpr std::size_t kBatch = 512;                        // spans per export at most
  static constexpr std::chrono::milliseconds kInterval{1000};       // a partial batch waits this
  static constexpr std::chrono::milliseconds kExportTimeout{5000};  // one export, at most
  static constexpr std::chrono::milliseconds kShutdownFlush{3000};  // stop(), at most
  static constexpr std::chrono::seconds kFailureLogInterval{60};    // one log line per this

  // The exporter for `config`, its thread started; or the start-up problem (a URL that does not
  // parse, an unreadable CA file). `version`: service.version. `ca_file`: trusted for an https
  // collector besides the system store (the config's `ca_file`, as for upstreams).
  static std::variant<std::unique_ptr<SpanExporter>, std::string> start(
      const config::Tracing& config, std::string version,
      const std::optional<std::filesystem::path>& ca_file);
  ~SpanExporter();
  SpanExporter(const SpanExporter&) = delete;
  SpanExporter& operator=(const SpanExporter&) = delete;

  // Queues `span`; when the queue is full it is dropped and counted. Never waits on the network.
  void add(Span span);

  // Sends what is queued (within kShutdownFlush; what is left then is dropped and counted) and
  // ends the thread. Idempotent.
  void stop();

  struct Stats {
    std::uint64_t exported = 0;  // spans the collector accepted
    std::uint64_t dropped = 0;   // queue full, or in a batch the collector did not accept
    std::uint64_t failures = 0;  // batches the collector did not accept
    std::uint64_t queued = 0;
  };
  Stats stats() const;

  const std::string& endpoint() const { return endpoint_text_; }

  struct Impl;

 private:
  explicit SpanExporter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::string endpoint_text_;
};

// A tools/call's span while it runs: its place in a trace, or untraced (empty trace_id).
struct CallSpan {
  std::string trace_id;
  std::string span_id;
  std::string parent_id;  // the caller's span; empty when the trace started here
  std::string tracestate;
  bool sampled = false;
  std::int64_t start_unix_us = 0;

  bool traced() const { return !trace_id.empty(); }
  // This span as the parent of what the call does ("00-<trace>-<span>-<flags>"); empty: none.
  std::string traceparent() const;
};

// What a tools/call's span says besides its outcome.
struct CallFacts {
  std::string tool;
  std::string request_id;        // the JSON-RPC id, as JSON text
  std::string session;           // the session's name ("http-7"; never Mcp-Session-Id); or empty
  std::string protocol_version;  // the MCP revision the request is served by
  std::string transport;         // "stdio" or "http"
  std::string principal;
};

// Where a call's incoming trace context came from, before it is parsed.
struct IncomingTrace {
  std::optional<std::string> traceparent;
  std::optional<std::string> tracestate;
};

// Whether a call without a valid incoming traceparent starts a trace of its own.
enum class NewTraces { start, none };

// The span of a call accepted now. `from_meta` (params._meta) wins over `from_transport` (the HTTP
// headers) when it holds a valid traceparent; a malformed one is ignored (logged by its length
// only). With neither: a new sampled trace, or untraced (NewTraces::none).
CallSpan begin_call_span(const IncomingTrace& from_meta, const IncomingTrace& from_transport,
                         NewTraces new_traces);

class Tracer : public FetchObserver {
 public:
  // `exporter`: where finished spans go; null: none are exported (a call's incoming trace is
  // still passed on upstream). `urls`: the gateway's policy, to write a request's URL, host and
  // port as the gateway normalised them. Both outlive the Tracer.
  Tracer(SpanExporter* exporter, const gateway::UrlPolicy& urls);

  bool exporting() const { return exporter_ != nullptr; }

  // begin_call_span, with a new trace for a call that brings none when spans are exported.
  CallSpan begin_call(const IncomingTrace& from_meta, const IncomingTrace& from_transport) const {
    return begin_call_span(from_meta, from_transport,
                           exporting() ? NewTraces::start : NewTraces::none);
  }

  // The call answered with `outcome`: its SERVER span is exported when traced and sampled.
  void end_call(const CallSpan& span, const CallFacts& facts,
                const channel::Outcome& outcome) const;

  // The SERVER span end_call exports (for tests).
  static Span call_span(const CallSpan& span, const CallFacts& facts,
                        const channel::Outcome& outcome, std::int64_t end_unix_us);

  // Each request carries the host's traceparent (and the call's tracestate) instead of any the
  // code set; it gets a CLIENT span, exported when the call's is.
  void on_send(const ObservedCall& call, ObservedFetch& fetch,
               gateway::OutboundRequest& request) override;
  void on_answer(const ObservedCall& call, const ObservedFetch& fetch,
                 const gateway::FetchResult& result) override;

  // The CLIENT span on_answer exports (for tests).
  Span request_span(const TraceParent& parent, const ObservedFetch& fetch,
                    const gateway::FetchResult& result) const;

 private:
  SpanExporter* exporter_;
  const gateway::UrlPolicy& urls_;
};

}  // namespace codemode::server
