// The parts the daemon runs, built once at start from the config and the API descriptions: for
// each API its tools, gateway, document image, approvals and sandbox; shared by all of them the
// audit writer, the span exporter, the metrics, the token exchanger and the listeners.
//
// Building reports every problem it finds, not the first: an upstream the gateway refuses, an
// approval rule naming an operation the description lacks, an audit store that cannot open and a
// port already taken come out together (issue 35), each API's under `apis.NAME.` (README.md,
// "Several APIs"). The daemon (daemon.h) only runs what assemble() built and owns the shutdown.
//
// One API's parts never serve another's call: each API has its own Gateway (its allowlist,
// credentials, operation policy, budget per call and approvals), its own RequestStates (a 2026
// approval sealed for one API does not open at another) and its own Sandbox, whose processes
// map only that API's document image and whose fetch reaches only that API's gateway.
//
// Threading: built on the thread that then runs `io` (Daemon::run), before it runs; afterwards
// every part lives on that thread but for the threads they own (sandbox launchers, the audit
// writer, the span exporter). Lifetime: Parts is neither copied nor moved (sessions and fetchers
// hold references into it); its members are declared so that each outlives what refers to it.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "audit/writer.h"
#include "auth/token_exchanger.h"
#include "config/config.h"
#include "gateway/gateway.h"
#include "mcp/mcp_session.h"
#include "mcp/request_state.h"
#include "mcp/tools.h"
#include "observe/call_audit.h"
#include "observe/metrics.h"
#include "observe/tracing.h"
#include "openapi/document.h"
#include "openapi/image.h"
#include "sandbox/engine.h"
#include "sandbox/sandbox.h"
#include "transport/http_transport.h"
#include "transport/metrics_listener.h"

namespace codemode::server {

struct DaemonOptions {
  config::Config config;
  // Each API's parsed description, in the order of config.apis (load_descriptions).
  std::vector<openapi::Document> apis;
  ServerInfo info;
  std::size_t max_message_bytes = std::size_t{4} * 1024 * 1024;
  // Which transports run: stdio (stdin/stdout), HTTP (when set), or both. stdio serves
  // config.apis[stdio_api] (--api NAME).
  bool serve_stdio = true;
  std::size_t stdio_api = 0;
  std::optional<HttpOptions> http;
  // `--metrics HOST:PORT`: /metrics on a listener of its own (transport/metrics_listener.h).
  std::optional<HttpEndpoint> metrics;
  // How long a shutdown signal waits for running calls before giving up on them.
  std::chrono::milliseconds shutdown_grace{5000};
  // Where tool code runs: sandbox processes of the engine in this folder (sandbox/engine.h).
  std::string engine_dir = sandbox::default_engine_dir();
  sandbox::ChildStderr sandbox_stderr = sandbox::ChildStderr::discard;
};

// Reads each API's description (config.apis[i].openapi; an API with none is given one in
// `built_in`, by name: the embedded demo's). Every problem of every API at once, each under the
// API's config path ("openapi: FILE: …", or "apis.NAME.openapi: FILE: …"); the descriptions in
// the order of config.apis when there is none.
std::variant<std::vector<openapi::Document>, std::vector<std::string>> load_descriptions(
    const config::Config& config, std::map<std::string, openapi::Document> built_in = {});

// One API as the daemon serves it. Declared in the order its parts refer to each other.
struct ServedApi {
  std::string name;
  std::unique_ptr<ToolCatalog> tools;
  std::unique_ptr<gateway::Gateway> gateway;
  std::unique_ptr<openapi::DocumentImage> image;  // mapped by the sandbox's processes
  std::optional<CallAudit> trail;                 // with an audit trail; over Parts' writer
  std::unique_ptr<Tracer> tracer;                 // over Parts' exporter (or none)
  std::shared_ptr<RequestStates> request_states;  // with policy.approve
  std::unique_ptr<sandbox::Sandbox> sandbox;      // last: refers to all of the above
  std::size_t max_calls = 0;  // one principal's calls in flight, running or queued

  // A session on this API for `principal`; `transport` names it in audit records.
  std::shared_ptr<McpSession> session(boost::asio::any_io_executor executor, const ServerInfo& info,
                                      McpSession::Send send, std::string principal,
                                      std::string transport, Metrics& metrics);
};

struct Parts {
  Parts() = default;
  Parts(const Parts&) = delete;
  Parts& operator=(const Parts&) = delete;

  std::shared_ptr<auth::TokenExchanger> exchanger;  // when some upstream exchanges tokens
  std::unique_ptr<audit::Writer> audit_writer;      // outlives every API's trail
  std::unique_ptr<SpanExporter> span_exporter;      // outlives every API's tracer
  std::unique_ptr<Metrics> metrics;
  std::vector<std::unique_ptr<ServedApi>> apis;  // in the order of config.apis
  std::optional<HttpServer> http;                // listening, not yet served
  std::optional<MetricsListener> metrics_listener;

  // Every API's sandbox: stop_all on each (the shutdown's grace period is over).
  void stop_all(const std::string& message);
};

// Builds every part, binding the listeners; problems one line each. Consumes options.apis (each
// description is dropped once its image is built: the sandbox reads the image).
std::variant<std::unique_ptr<Parts>, std::vector<std::string>> assemble(boost::asio::io_context& io,
                                                                        DaemonOptions& options);

// Where an API's keys are in the config: "" for the single-API form's only API, else
// "apis.NAME.".
std::string path_of(const config::Config& config, const config::Api& api);

// The ApiSummary the tool descriptions use.
ApiSummary summarize(const openapi::Document& api, const config::Api& config);

}  // namespace codemode::server
