#include "observe/tracing.h"

#include <chrono>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "observe/trace_context.h"

using namespace codemode;
using namespace codemode::server;
using Json = nlohmann::json;

namespace {

constexpr const char* kParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

config::Upstream upstream(std::string origin) {
  config::Upstream u;
  u.origin = std::move(origin);
  u.headers = {{"Authorization", "Bearer s3cret-credential-value"}};
  return u;
}

const Json* attribute(const Json& span, std::string_view key) {
  for (const auto& a : span["attributes"]) {
    if (a["key"] == key) return &a["value"];
  }
  return nullptr;
}

Span some_span(int n) {
  Span span;
  span.trace_id = new_trace_id();
  span.span_id = new_span_id();
  span.name = "span " + std::to_string(n);
  return span;
}

// A loopback collector that reads one request (headers and a Content-Length body), answers
// 200 and closes; `request` holds what it read once the thread is joined.
class OneShotCollector {
 public:
  OneShotCollector() : acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] {
      boost::asio::ip::tcp::socket socket = acceptor_.accept();
      boost::asio::streambuf buffer;
      const std::size_t head = boost::asio::read_until(socket, buffer, "\r\n\r\n");
      std::string text(boost::asio::buffers_begin(buffer.data()),
                       boost::asio::buffers_end(buffer.data()));
      const auto length_at = text.find("Content-Length: ");
      const std::size_t length = std::stoul(text.substr(length_at + 16));
      if (text.size() < head + length) {
        boost::asio::read(socket, buffer,
                          boost::asio::transfer_exactly(head + length - text.size()));
      }
      request = std::string(boost::asio::buffers_begin(buffer.data()),
                            boost::asio::buffers_end(buffer.data()));
      boost::asio::write(socket, boost::asio::buffer(std::string_view(
                                     "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: "
                                     "close\r\n\r\n{}")));
    });
  }
  ~OneShotCollector() {
    if (thread_.joinable()) thread_.join();
  }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + "/v1/traces";
  }
  void join() { thread_.join(); }
  std::string request;

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
};

}  // namespace

TEST_CASE("traceparent: version 00 is read, anything malformed is refused",
          "[server][tracing][traceparent]") {
  const auto parsed = parse_traceparent(kParent);
  REQUIRE(parsed);
  CHECK(parsed->trace_id == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(parsed->parent_id == "00f067aa0ba902b7");
  CHECK(parsed->sampled);
  CHECK_FALSE(
      parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")->sampled);
  // A later version may carry more after a '-'; version 00 may not.
  CHECK(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"));
  for (const std::string bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",  // 00 with more
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",        // upper case
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",        // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",        // zero parent id
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",        // version ff
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",        // separator
           "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",        // not hex
           "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",       // no '-' after 55
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\n",       // control
       }) {
    INFO(bad);
    CHECK_FALSE(parse_traceparent(bad));
  }
  CHECK_FALSE(parse_traceparent(std::string(100000, 'a')));
}

TEST_CASE("traceparent: formatted ids are fresh, valid and round-trip",
          "[server][tracing][traceparent]") {
  const std::string trace = new_trace_id();
  const std::string span = new_span_id();
  CHECK(trace.size() == 32);
  CHECK(span.size() == 16);
  CHECK(new_trace_id() != trace);
  CHECK(new_span_id() != span);
  const std::string text = format_traceparent(trace, span, true);
  const auto parsed = parse_traceparent(text);
  REQUIRE(parsed);
  CHECK(parsed->trace_id == trace);
  CHECK(parsed->parent_id == span);
  CHECK(parsed->sampled);
  CHECK(format_traceparent(trace, span, false).ends_with("-00"));
}

TEST_CASE("tracestate: kept when well formed, dropped otherwise",
          "[server][tracing][traceparent]") {
  CHECK(valid_tracestate("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7") ==
        "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7");
  CHECK(valid_tracestate("") == "");
  CHECK(valid_tracestate("novalue") == "");
  CHECK(valid_tracestate("a=b\r\nX-Injected: 1") == "");
  CHECK(valid_tracestate(std::string(513, 'a')) == "");
  std::string many;
  for (int i = 0; i < 33; ++i) many += "k" + std::to_string(i) + "=v,";
  CHECK(valid_tracestate(many) == "");
}

TEST_CASE(
    "a call's span: _meta before the HTTP header, malformed ignored, new traces only when "
    "exporting",
    "[server][tracing]") {
  const IncomingTrace meta{kParent, "a=1"};
  const IncomingTrace header{"00-11111111111111111111111111111111-2222222222222222-01", "b=2"};
  const IncomingTrace bad{"00-zz", std::nullopt};

  CallSpan span = begin_call_span(meta, header, NewTraces::none);
  CHECK(span.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(span.parent_id == "00f067aa0ba902b7");
  CHECK(span.tracestate == "a=1");
  CHECK(span.span_id.size() == 16);
  CHECK(span.traceparent() == format_traceparent(span.trace_id, span.span_id, true));

  span = begin_call_span(bad, header, NewTraces::none);
  CHECK(span.trace_id == "11111111111111111111111111111111");
  CHECK(span.tracestate == "b=2");

  span = begin_call_span(bad, {}, NewTraces::none);
  CHECK_FALSE(span.traced());
  CHECK(span.traceparent().empty());

  span = begin_call_span(bad, {}, NewTraces::start);
  CHECK(span.traced());
  CHECK(span.parent_id.empty());
  CHECK(span.sampled);
}

TEST_CASE("the tools/call span follows the MCP and GenAI conventions", "[server][tracing][otlp]") {
  CallSpan call = begin_call_span({kParent, std::nullopt}, {}, NewTraces::none);
  CallFacts facts{"execute", "7", "http-3", "2025-11-25", "http", "alice"};
  const auto failed = channel::Outcome::failure(channel::ErrorKind::timeout, "cpu limit 50 ms");
  const Span span = Tracer::call_span(call, facts, failed, call.start_unix_us + 1500);
  const Json body = Json::parse(otlp_json({span}, "svc", "1.2.3"));

  const Json& resource = body["resourceSpans"][0]["resource"];
  CHECK(resource["attributes"][0]["key"] == "service.name");
  CHECK(resource["attributes"][0]["value"]["stringValue"] == "svc");
  const Json& out = body["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
  CHECK(out["name"] == "tools/call execute");
  CHECK(out["kind"] == 2);
  CHECK(out["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(out["parentSpanId"] == "00f067aa0ba902b7");
  CHECK(out["spanId"] == call.span_id);
  CHECK(std::stoll(out["endTimeUnixNano"].get<std::string>()) -
            std::stoll(out["startTimeUnixNano"].get<std::string>()) ==
        1500000);
  CHECK((*attribute(out, "mcp.method.name"))["stringValue"] == "tools/call");
  CHECK((*attribute(out, "gen_ai.tool.name"))["stringValue"] == "execute");
  CHECK((*attribute(out, "gen_ai.operation.name"))["stringValue"] == "execute_tool");
  CHECK((*attribute(out, "mcp.session.id"))["stringValue"] == "http-3");
  CHECK((*attribute(out, "mcp.protocol.version"))["stringValue"] == "2025-11-25");
  CHECK((*attribute(out, "jsonrpc.request.id"))["stringValue"] == "7");
  CHECK((*attribute(out, "error.type"))["stringValue"] == "tool_error");
  CHECK((*attribute(out, "codemode.error.kind"))["stringValue"] == "timeout");
  CHECK(out["status"]["code"] == 2);
  CHECK(out["status"]["message"] == "timeout: cpu limit 50 ms");

  channel::Outcome ok;
  ok.ok = true;
  const Json fine = Json::parse(otlp_json({Tracer::call_span(call, facts, ok, 0)}, "s", "v"));
  const Json& fine_span = fine["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
  CHECK(attribute(fine_span, "error.type") == nullptr);
  CHECK_FALSE(fine_span.contains("status"));
  // A root span has no parentSpanId; a span never ends before it starts.
  CallSpan root = begin_call_span({}, {}, NewTraces::start);
  const Json rooted = Json::parse(otlp_json({Tracer::call_span(root, facts, ok, 0)}, "s", "v"));
  const Json& root_span = rooted["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
  CHECK_FALSE(root_span.contains("parentSpanId"));
  CHECK(root_span["startTimeUnixNano"] == root_span["endTimeUnixNano"]);
}

TEST_CASE("requests carry the host's traceparent, never the code's, and get CLIENT spans",
          "[server][tracing]") {
  const gateway::UrlPolicy urls({upstream("http://127.0.0.1:8788")});
  Tracer tracer(nullptr, urls);
  const CallSpan call = begin_call_span({kParent, "a=1"}, {}, NewTraces::none);
  const ObservedCall observed{"", "alice", call.traceparent(), call.tracestate};

  gateway::OutboundRequest request;
  request.url = "/products?limit=3";
  request.headers = {{"TraceParent", "00-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-bbbbbbbbbbbbbbbb-01"},
                     {"tracestate", "evil=1"},
                     {"Accept", "application/json"}};
  ObservedFetch fetch;
  fetch.method = "get";
  fetch.url = request.url;
  tracer.on_send(observed, fetch, request);
  REQUIRE(fetch.span_id.size() == 16);
  gateway::Headers expected{{"Accept", "application/json"},
                            {"traceparent", format_traceparent(call.trace_id, fetch.span_id, true)},
                            {"tracestate", "a=1"}};
  CHECK(request.headers == expected);

  // An untraced call: the code's trace headers are still dropped, none are added.
  gateway::OutboundRequest untraced;
  untraced.headers = {{"traceparent", kParent}};
  ObservedFetch untraced_fetch;
  tracer.on_send(ObservedCall{}, untraced_fetch, untraced);
  CHECK(untraced.headers.empty());
  CHECK(untraced_fetch.span_id.empty());

  gateway::InboundResponse response;
  response.status = 404;
  const auto parent = parse_traceparent(call.traceparent());
  const Json body =
      Json::parse(otlp_json({tracer.request_span(*parent, fetch, response)}, "s", "v"));
  const Json& span = body["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
  CHECK(span["kind"] == 3);
  CHECK(span["name"] == "GET");
  CHECK(span["parentSpanId"] == call.span_id);
  CHECK(span["spanId"] == fetch.span_id);
  CHECK((*attribute(span, "http.request.method"))["stringValue"] == "GET");
  CHECK((*attribute(span, "url.full"))["stringValue"] == "http://127.0.0.1:8788/products?limit=3");
  CHECK((*attribute(span, "server.address"))["stringValue"] == "127.0.0.1");
  CHECK((*attribute(span, "server.port"))["intValue"] == "8788");
  CHECK((*attribute(span, "http.response.status_code"))["intValue"] == "404");
  CHECK((*attribute(span, "error.type"))["stringValue"] == "404");
  CHECK(body.dump().find("s3cret") == std::string::npos);

  // A refusal: the URL as written, the policy's reason, status ERROR.
  ObservedFetch refused = fetch;
  refused.url = "http://evil.test/\xff";
  const Json refusal = Json::parse(otlp_json(
      {tracer.request_span(*parent, refused,
                           gateway::GatewayError{gateway::ErrorKind::policy,
                                                 "origin http://evil.test is not allowed"})},
      "s", "v"));
  const Json& refused_span = refusal["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
  CHECK((*attribute(refused_span, "error.type"))["stringValue"] == "policy");
  CHECK((*attribute(refused_span, "codemode.refusal.reason"))["stringValue"] == "origin");
  CHECK((*attribute(refused_span, "url.full"))["stringValue"] == "http://evil.test/\xef\xbf\xbd");
  CHECK(refused_span["status"]["message"] == "policy: origin http://evil.test is not allowed");
}

TEST_CASE("the exporter posts OTLP JSON with the configured headers, and stop() flushes",
          "[server][tracing][exporter]") {
  OneShotCollector collector;
  config::Tracing config;
  config.otlp = collector.url();
  config.service_name = "unit";
  config.headers = {{"Authorization", "Bearer collector-token"}};
  auto started = SpanExporter::start(config, "9.9", std::nullopt);
  REQUIRE(std::holds_alternative<std::unique_ptr<SpanExporter>>(started));
  auto& exporter = std::get<std::unique_ptr<SpanExporter>>(started);
  exporter->add(some_span(1));
  exporter->add(some_span(2));
  exporter->stop();  // sends the two before the interval is up
  collector.join();
  const auto stats = exporter->stats();
  CHECK(stats.exported == 2);
  CHECK(stats.dropped == 0);
  CHECK(stats.failures == 0);
  const std::string& request = collector.request;
  CHECK(request.starts_with("POST /v1/traces HTTP/1.1\r\n"));
  CHECK(request.find("\r\nContent-Type: application/json\r\n") != std::string::npos);
  CHECK(request.find("\r\nAuthorization: Bearer collector-token\r\n") != std::string::npos);
  const Json body = Json::parse(request.substr(request.find("\r\n\r\n") + 4));
  const Json& spans = body["resourceSpans"][0]["scopeSpans"][0]["spans"];
  REQUIRE(spans.size() == 2);
  CHECK(spans[0]["name"] == "span 1");
  CHECK(spans[1]["name"] == "span 2");
}

TEST_CASE("a full queue drops and counts, and a collector that is down costs stop() little",
          "[server][tracing][exporter]") {
  std::uint16_t closed_port = 0;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor probe(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    closed_port = probe.local_endpoint().port();
  }  // nothing listens there now
  config::Tracing config;
  config.otlp = "http://127.0.0.1:" + std::to_string(closed_port) + "/v1/traces";
  config.queue = 3;
  auto started = SpanExporter::start(config, "9.9", std::nullopt);
  REQUIRE(std::holds_alternative<std::unique_ptr<SpanExporter>>(started));
  auto& exporter = std::get<std::unique_ptr<SpanExporter>>(started);
  for (int i = 0; i < 5; ++i) exporter->add(some_span(i));
  // The thread takes a partial batch once a second: the queue is still full here.
  auto stats = exporter->stats();
  CHECK(stats.queued == 3);
  CHECK(stats.dropped == 2);
  const auto before = std::chrono::steady_clock::now();
  exporter->stop();
  CHECK(std::chrono::steady_clock::now() - before < SpanExporter::kShutdownFlush);
  stats = exporter->stats();
  CHECK(stats.exported == 0);
  CHECK(stats.dropped == 5);
  CHECK(stats.failures == 1);
  exporter->add(some_span(6));  // after stop: dropped, never queued
  CHECK(exporter->stats().dropped == 6);
}

TEST_CASE("an OTLP URL that does not parse is a start-up problem", "[server][tracing][exporter]") {
  config::Tracing config;
  config.otlp = "http://exa mple.test:99999/v1/traces";
  auto started = SpanExporter::start(config, "9.9", std::nullopt);
  REQUIRE(std::holds_alternative<std::string>(started));
  CHECK(std::get<std::string>(started).starts_with("tracing.otlp: "));
}
