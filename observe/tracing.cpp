#include "observe/tracing.h"

#include <algorithm>
#include <atomic>
#include <chrono>

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "audit/record.h"
#include "gateway/http_client.h"
#include "gateway/request_check.h"
#include "observe/metrics.h"

namespace codemode::server {

namespace {

using Json = nlohmann::json;

// Longest text a span attribute or status takes from a call (a URL the code wrote, an error
// message): enough to read, bounded so a span stays small.
constexpr std::size_t kMaxAttributeText = 2048;
constexpr std::size_t kMaxStatusMessage = 512;

std::string cut(std::string_view text, std::size_t max) { return std::string(text.substr(0, max)); }

Json attribute_json(const std::string& key, const AttributeValue& value) {
  Json any;
  if (const auto* text = std::get_if<std::string>(&value)) {
    any["stringValue"] = *text;
  } else {
    any["intValue"] = std::to_string(std::get<std::int64_t>(value));  // int64 as a JSON string
  }
  return Json{{"key", key}, {"value", std::move(any)}};
}

Json span_json(const Span& span) {
  Json attributes = Json::array();
  for (const auto& [key, value] : span.attributes) attributes.push_back(attribute_json(key, value));
  Json out{{"traceId", span.trace_id},
           {"spanId", span.span_id},
           {"name", span.name},
           {"kind", static_cast<int>(span.kind)},
           {"startTimeUnixNano", std::to_string(span.start_unix_us * 1000)},
           {"endTimeUnixNano", std::to_string(span.end_unix_us * 1000)},
           {"attributes", std::move(attributes)}};
  if (!span.parent_span_id.empty()) out["parentSpanId"] = span.parent_span_id;
  if (span.error) {
    out["status"] = Json{{"code", 2}, {"message", span.status_message}};  // STATUS_CODE_ERROR
  }
  return out;
}

}  // namespace

std::string otlp_json(const std::vector<Span>& spans, std::string_view service_name,
                      std::string_view service_version) {
  Json list = Json::array();
  for (const Span& span : spans) list.push_back(span_json(span));
  Json resource{{"attributes",
                 Json::array({attribute_json("service.name", std::string(service_name)),
                              attribute_json("service.version", std::string(service_version))})}};
  Json scope{{"name", "codemode-mcp"}, {"version", std::string(service_version)}};
  Json body{{"resourceSpans",
             Json::array({Json{{"resource", std::move(resource)},
                               {"scopeSpans", Json::array({Json{{"scope", std::move(scope)},
                                                                {"spans", std::move(list)}}})}}})}};
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// ---------------------------------------------------------------------------------------------
// The exporter.

struct SpanExporter::Impl {
  config::Tracing config;
  gateway::NormalisedUrl url;
  std::string version;

  mutable std::mutex mutex;
  std::condition_variable wake;      // spans arrived, or stop
  std::condition_variable finished;  // the thread has sent everything it will
  std::deque<Span> queue;            // guarded by mutex
  bool stopping = false;             // guarded by mutex
  bool done = false;                 // guarded by mutex
  std::atomic<bool> abandon{false};  // stop()'s time is up: give up on the export in flight
  std::atomic<std::uint64_t> exported{0};
  std::atomic<std::uint64_t> dropped{0};
  std::atomic<std::uint64_t> failures{0};

  // The exporter thread's own: its io_context and the HTTP client on it.
  boost::asio::io_context io;
  std::unique_ptr<gateway::HttpClient> client;
  std::chrono::steady_clock::time_point last_failure_log{};
  std::uint64_t failures_unlogged = 0;
  std::thread thread;

  void run() {
    for (;;) {
      std::vector<Span> batch;
      {
        std::unique_lock lock(mutex);
        wake.wait_for(lock, kInterval, [&] { return stopping || queue.size() >= kBatch; });
        if (queue.empty() || abandon) {
          if (stopping) break;
          continue;
        }
        const std::size_t n = std::min(queue.size(), kBatch);
        batch.assign(std::make_move_iterator(queue.begin()),
                     std::make_move_iterator(queue.begin() + static_cast<std::ptrdiff_t>(n)));
        queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(n));
      }
      send(batch);
    }
    std::lock_guard lock(mutex);
    done = true;
    finished.notify_all();
  }

  void send(const std::vector<Span>& batch) {
    gateway::ClientRequest request;
    request.method = gateway::Method::post;
    request.url = url;
    request.headers = config.headers;
    request.headers.emplace_back("Content-Type", "application/json");
    request.body = otlp_json(batch, config.service_name, version);
    struct Result {
      bool done = false;
      std::optional<gateway::ClientResult> value;
    };
    auto result = std::make_shared<Result>();
    client->send(std::move(request), gateway::Clock::now() + kExportTimeout,
                 [result](gateway::ClientResult value) {
                   result->value = std::move(value);
                   result->done = true;
                 });
    io.restart();
    while (!result->done && !abandon) io.run_one_for(std::chrono::milliseconds(50));
    std::string failure;
    if (!result->done) {
      failure = "the server stopped before the collector answered";
    } else if (const auto* error = std::get_if<gateway::GatewayError>(&*result->value)) {
      failure = error->message;  // names the origin and the phase, never a header value
    } else {
      const auto& response = std::get<gateway::InboundResponse>(*result->value);
      if (response.status < 200 || response.status > 299) {
        failure = "the collector answered " + std::to_string(response.status);
      }
    }
    if (failure.empty()) {
      exported += batch.size();
      return;
    }
    dropped += batch.size();
    ++failures;
    ++failures_unlogged;
    const auto now = std::chrono::steady_clock::now();
    if (last_failure_log == std::chrono::steady_clock::time_point{} ||
        now - last_failure_log >= kFailureLogInterval) {
      spdlog::warn(
          "tracing: export to {} failed: {}; {} spans dropped ({} failed exports since "
          "the last such line)",
          url.origin, failure, batch.size(), failures_unlogged);
      last_failure_log = now;
      failures_unlogged = 0;
    }
  }
};

std::variant<std::unique_ptr<SpanExporter>, std::string> SpanExporter::start(
    const config::Tracing& config, std::string version,
    const std::optional<std::filesystem::path>& ca_file) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->version = std::move(version);
  auto parsed = gateway::normalise_url(config.otlp, "");
  if (auto* problem = std::get_if<std::string>(&parsed)) {
    return "tracing.otlp: " + *problem;
  }
  impl->url = std::get<gateway::NormalisedUrl>(std::move(parsed));
  gateway::ClientOptions options;
  options.max_idle_per_origin = 1;
  options.ca_file = ca_file;
  auto client = gateway::HttpClient::create(impl->io, options);
  if (auto* problems = std::get_if<std::vector<std::string>>(&client)) {
    return "tracing: " + (problems->empty() ? std::string("no HTTP client") : problems->front());
  }
  impl->client = std::move(std::get<0>(client));
  std::unique_ptr<SpanExporter> exporter(new SpanExporter(std::move(impl)));
  exporter->endpoint_text_ = exporter->impl_->url.full();
  Impl* raw = exporter->impl_.get();
  raw->thread = std::thread([raw] { raw->run(); });
  return exporter;
}

SpanExporter::SpanExporter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SpanExporter::~SpanExporter() { stop(); }

void SpanExporter::add(Span span) {
  std::lock_guard lock(impl_->mutex);
  if (impl_->stopping || impl_->queue.size() >= impl_->config.queue) {
    ++impl_->dropped;
    return;
  }
  impl_->queue.push_back(std::move(span));
  if (impl_->queue.size() >= kBatch) impl_->wake.notify_one();
}

void SpanExporter::stop() {
  if (!impl_->thread.joinable()) return;
  {
    std::unique_lock lock(impl_->mutex);
    impl_->stopping = true;
    impl_->wake.notify_one();
    if (!impl_->finished.wait_for(lock, kShutdownFlush, [&] { return impl_->done; })) {
      impl_->abandon = true;  // the export in flight gives up; the rest is dropped below
    }
  }
  impl_->thread.join();
  std::lock_guard lock(impl_->mutex);
  impl_->dropped += impl_->queue.size();
  impl_->queue.clear();
  impl_->client.reset();
}

SpanExporter::Stats SpanExporter::stats() const {
  std::lock_guard lock(impl_->mutex);
  return Stats{impl_->exported, impl_->dropped, impl_->failures, impl_->queue.size()};
}

// ---------------------------------------------------------------------------------------------
// The tracer.

std::string CallSpan::traceparent() const {
  return traced() ? format_traceparent(trace_id, span_id, sampled) : std::string();
}

Tracer::Tracer(SpanExporter* exporter, const gateway::UrlPolicy& urls)
    : exporter_(exporter), urls_(urls) {}

CallSpan begin_call_span(const IncomingTrace& from_meta, const IncomingTrace& from_transport,
                         NewTraces new_traces) {
  CallSpan span;
  span.start_unix_us = audit::now_us();
  // _meta is the MCP way and names this request alone; the HTTP header may be a proxy's.
  const IncomingTrace* chosen = nullptr;
  std::optional<TraceParent> parent;
  for (const IncomingTrace* incoming : {&from_meta, &from_transport}) {
    if (!incoming->traceparent) continue;
    parent = parse_traceparent(*incoming->traceparent);
    if (parent) {
      chosen = incoming;
      break;
    }
    spdlog::debug("tracing: ignored a malformed traceparent ({} bytes); a new trace starts",
                  incoming->traceparent->size());
  }
  if (parent) {
    span.trace_id = parent->trace_id;
    span.parent_id = parent->parent_id;
    span.sampled = parent->sampled;
    if (chosen->tracestate) span.tracestate = valid_tracestate(*chosen->tracestate);
  } else if (new_traces == NewTraces::start) {
    span.trace_id = new_trace_id();
    span.sampled = true;
  } else {
    return span;  // untraced
  }
  span.span_id = new_span_id();
  return span;
}

Span Tracer::call_span(const CallSpan& call, const CallFacts& facts,
                       const channel::Outcome& outcome, std::int64_t end_unix_us) {
  Span span;
  span.trace_id = call.trace_id;
  span.span_id = call.span_id;
  span.parent_span_id = call.parent_id;
  span.name = "tools/call " + facts.tool;
  span.kind = SpanKind::server;
  span.start_unix_us = call.start_unix_us;
  span.end_unix_us = std::max(end_unix_us, call.start_unix_us);
  auto& a = span.attributes;
  a.emplace_back("mcp.method.name", std::string("tools/call"));
  a.emplace_back("gen_ai.operation.name", std::string("execute_tool"));
  a.emplace_back("gen_ai.tool.name", facts.tool);
  a.emplace_back("gen_ai.tool.type", std::string("function"));
  if (!facts.request_id.empty()) {
    a.emplace_back("jsonrpc.request.id", cut(facts.request_id, 128));
  }
  if (!facts.session.empty()) a.emplace_back("mcp.session.id", facts.session);
  if (!facts.protocol_version.empty())
    a.emplace_back("mcp.protocol.version", facts.protocol_version);
  if (facts.transport == "stdio") {
    a.emplace_back("network.transport", std::string("pipe"));
  } else {
    a.emplace_back("network.transport", std::string("tcp"));
    a.emplace_back("network.protocol.name", std::string("http"));
  }
  if (!facts.principal.empty()) a.emplace_back("codemode.principal", facts.principal);
  if (outcome.sandbox_us > 0 || outcome.queued_us > 0) {
    a.emplace_back("codemode.queue_us", static_cast<std::int64_t>(outcome.queued_us));
    a.emplace_back("codemode.cpu_us", static_cast<std::int64_t>(outcome.cpu_us));
  }
  if (!outcome.ok) {
    // MCP semconv: a result with isError is a tool_error; our kind says which.
    a.emplace_back("error.type", std::string("tool_error"));
    a.emplace_back("codemode.error.kind", std::string(channel::to_string(outcome.error_kind)));
    span.error = true;
    span.status_message = std::string(channel::to_string(outcome.error_kind)) + ": " +
                          cut(outcome.error_message, kMaxStatusMessage);
  }
  return span;
}

void Tracer::end_call(const CallSpan& span, const CallFacts& facts,
                      const channel::Outcome& outcome) const {
  if (exporter_ == nullptr || !span.traced() || !span.sampled) return;
  exporter_->add(call_span(span, facts, outcome, audit::now_us()));
}

void Tracer::on_send(const ObservedCall& call, ObservedFetch& fetch,
                     gateway::OutboundRequest& request) {
  // The trace context is the host's: what the code set is never sent, traced call or not.
  auto& headers = request.headers;
  headers.erase(std::remove_if(headers.begin(), headers.end(),
                               [](const gateway::Header& h) { return is_trace_header(h.first); }),
                headers.end());
  const auto parent = parse_traceparent(call.traceparent);
  if (!parent) return;
  fetch.span_id = new_span_id();
  headers.emplace_back("traceparent",
                       format_traceparent(parent->trace_id, fetch.span_id, parent->sampled));
  if (!call.tracestate.empty()) headers.emplace_back("tracestate", call.tracestate);
}

Span Tracer::request_span(const TraceParent& parent, const ObservedFetch& fetch,
                          const gateway::FetchResult& result) const {
  Span span;
  span.trace_id = parent.trace_id;
  span.span_id = fetch.span_id;
  span.parent_span_id = parent.parent_id;
  span.kind = SpanKind::client;
  span.start_unix_us = fetch.started_unix_us;
  span.end_unix_us = fetch.started_unix_us + static_cast<std::int64_t>(fetch.seconds * 1e6);
  const auto method = gateway::parse_method(fetch.method);
  const std::string method_name = method ? std::string(gateway::to_string(*method)) : "_OTHER";
  span.name = method ? method_name : "HTTP";
  auto& a = span.attributes;
  a.emplace_back("http.request.method", method_name);
  // The URL as the gateway sends it: credentials are headers the gateway adds after this, never
  // part of the URL (README.md, "execute and fetch()").
  const gateway::PolicyDecision decision = urls_.decide(fetch.url);
  if (const auto* allowed = std::get_if<gateway::Allowed>(&decision)) {
    a.emplace_back("url.full", cut(allowed->url.full(), kMaxAttributeText));
    a.emplace_back("server.address", allowed->url.connect_host());
    a.emplace_back("server.port", static_cast<std::int64_t>(allowed->url.port));
  } else {
    a.emplace_back("url.full", cut(fetch.url, kMaxAttributeText));
  }
  if (const auto* response = std::get_if<gateway::InboundResponse>(&result)) {
    a.emplace_back("http.response.status_code", static_cast<std::int64_t>(response->status));
    if (response->status >= 400) {
      a.emplace_back("error.type", std::to_string(response->status));
      span.error = true;
    }
  } else {
    const auto& error = std::get<gateway::GatewayError>(result);
    a.emplace_back("error.type", std::string(gateway::to_string(error.kind)));
    if (error.kind == gateway::ErrorKind::policy) {
      a.emplace_back("codemode.refusal.reason", std::string(refusal_reason(error.message)));
    }
    span.error = true;
    span.status_message = cut(error.text(), kMaxStatusMessage);
  }
  return span;
}

void Tracer::on_answer(const ObservedCall& call, const ObservedFetch& fetch,
                       const gateway::FetchResult& result) {
  if (exporter_ == nullptr || fetch.span_id.empty()) return;
  const auto parent = parse_traceparent(call.traceparent);
  if (!parent || !parent->sampled) return;
  exporter_->add(request_span(*parent, fetch, result));
}

}  // namespace codemode::server
