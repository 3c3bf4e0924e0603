#include "server/daemon.h"

#include <malloc.h>

#include <unistd.h>

#include <csignal>
#include <optional>

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "audit/store.h"
#include "audit/writer.h"
#include "auth/token_exchanger.h"
#include "channel/call_control.h"
#include "gateway/gateway.h"
#include "gateway/operation_policy.h"
#include "gateway/request_check.h"
#include "net/origin.h"
#include "observe/call_audit.h"
#include "observe/metrics.h"
#include "observe/tracing.h"
#include "openapi/describe.h"
#include "openapi/image.h"
#include "openapi/operations.h"
#include "sandbox/sandbox.h"
#include "transport/metrics_listener.h"
#include "transport/stdio_transport.h"

namespace codemode::server {

namespace {

// After the grace period has ended the calls: how long their answers may take to be written.
constexpr std::chrono::milliseconds kAnswerFlush{2000};

// How far past an execute call's wall deadline the gateway gives up on its fetch: the isolate's
// watchdog ends the call at its deadline, so a fetch still in flight then is reported as the
// timeout it is, not as a fetch that failed. (The isolate's deadline counts from the Run frame's
// arrival in the sandbox process, a little after the fetcher is made.)
constexpr std::chrono::milliseconds kFetchDeadlineSlack{500};

// The sandbox's way to the gateway: each execute call gets its own subrequest budget (held by
// its fetcher; the gateway spends it inside fetch()), a deadline past its own wall deadline, and
// its principal's profile (config `principals`: that principal's headers and policy).
sandbox::FetcherFactory gateway_fetch(gateway::Gateway& gateway) {
  return [&gateway](const config::Limits& limits, const sandbox::Call& call) -> channel::Fetcher {
    auto budget = std::make_shared<gateway::CallBudget>(limits.subrequests);
    const auto deadline =
        gateway::Clock::now() + std::chrono::milliseconds(limits.wall_ms) + kFetchDeadlineSlack;
    return [&gateway, budget = std::move(budget), deadline,
            caller = gateway::Caller{call.principal, call.scopes, call.profile, call.approver,
                                     call.access_token}](gateway::OutboundRequest outbound,
                                                         channel::FetchDone done) {
      gateway::WaitHook waiting = done.waiting();
      std::shared_ptr<gateway::FetchAbort> abort = done.abort();
      gateway.fetch(std::move(outbound), *budget, deadline, std::move(done), caller, waiting,
                    abort);
    };
  };
}

// The token exchanger when some upstream's token is exchanged for the caller's (config
// `token_exchange`, which the config allows only with http.oauth); null when none is.
std::variant<std::shared_ptr<auth::TokenExchanger>, std::vector<std::string>> token_exchanger(
    boost::asio::io_context& io, const config::Config& config) {
  bool wanted = std::any_of(config.upstreams.begin(), config.upstreams.end(),
                            [](const config::Upstream& u) { return u.token_exchange.has_value(); });
  for (const auto& entry : config.principals) {
    for (const auto& upstream : entry.second.upstreams)
      wanted |= upstream.token_exchange.has_value();
  }
  if (!wanted || !config.http.oauth) return std::shared_ptr<auth::TokenExchanger>();
  return auth::TokenExchanger::create(io, *config.http.oauth, config.ca_file);
}

// The gateway's way to the exchanger: a failed exchange is a `runtime` error of the fetch.
gateway::TokenExchangeFunction exchange_tokens(std::shared_ptr<auth::TokenExchanger> exchanger) {
  return [exchanger = std::move(exchanger)](
             const config::TokenExchange& settings, const std::string& key,
             const gateway::CallerAccessToken& token, gateway::ExchangeDone done) {
    exchanger->exchange(settings, key, token.value, token.expires_at,
                        [done = std::move(done)](auth::TokenExchanger::Result result) {
                          if (auto* failed = std::get_if<auth::TokenExchanger::Failed>(&result)) {
                            return done(gateway::GatewayError{gateway::ErrorKind::runtime,
                                                              std::move(failed->message)});
                          }
                          done(gateway::ExchangedToken{
                              std::move(std::get<auth::TokenExchanger::Exchanged>(result).token)});
                        });
  };
}

// The first upstream's base path, once Daemon::run has settled it ("" for none).
std::string base_path_of(const config::Config& config) {
  return config.upstreams.empty() ? std::string() : config.upstreams.front().base_path.value_or("");
}

// Every operation the description declares, with the OAuth scopes its security asks for, under
// the description's base paths and the configured one (`base_path`, "" for none): what
// `policy.operations: spec` allows, what names the operation a request matched in the audit
// trail, and what `http.oauth.request_scopes.spec` checks.
gateway::OperationPolicyOptions described_operations(const openapi::Document& api,
                                                     const std::string& base_path) {
  gateway::OperationPolicyOptions options;
  std::vector<gateway::Operation> operations;
  for (auto& declared : openapi::declared_operations(api)) {
    // OPTIONS and TRACE are declared by some APIs but never sent by the gateway.
    if (auto method = gateway::parse_method(declared.method)) {
      operations.push_back({*method, declared.path_template, std::move(declared.scopes),
                            std::move(declared.operation_id), std::move(declared.summary),
                            std::move(declared.tags)});
    }
  }
  options.operations = std::move(operations);
  options.base_paths = openapi::server_base_paths(api);
  if (std::find(options.base_paths.begin(), options.base_paths.end(), base_path) ==
      options.base_paths.end()) {
    options.base_paths.insert(options.base_paths.begin(), base_path);
  }
  return options;
}

// policy.approve over the API description: every operationId and tag it names must be declared
// (a misspelt one would let its writes through unasked), else the problems.
std::variant<gateway::ApprovalSettings, std::vector<std::string>> approval_settings(
    const openapi::Document& api, const config::Approval& approve, const std::string& base_path) {
  gateway::ApprovalSettings settings;
  for (const auto& method : approve.methods) {
    if (auto parsed = gateway::parse_method(method)) settings.rules.methods.insert(*parsed);
  }
  settings.rules.operations = approve.operations;
  settings.rules.tags = approve.tags;
  settings.rules.paths = approve.paths;
  settings.operations = described_operations(api, base_path);
  std::vector<std::string> problems;
  const auto& declared = *settings.operations.operations;
  for (const auto& id : approve.operations) {
    if (std::none_of(declared.begin(), declared.end(),
                     [&id](const gateway::Operation& op) { return op.id == id; })) {
      problems.push_back("policy.approve.operations: the API description has no operation " + id);
    }
  }
  for (const auto& tag : approve.tags) {
    if (std::none_of(declared.begin(), declared.end(), [&tag](const gateway::Operation& op) {
          return std::find(op.tags.begin(), op.tags.end(), tag) != op.tags.end();
        })) {
      problems.push_back("policy.approve.tags: no operation of the API description has tag " + tag);
    }
  }
  if (!problems.empty()) return problems;
  return settings;
}

// The audit trail names the operation a request matched, whatever `policy.operations` enforces.
gateway::OperationPolicy audit_operations(const openapi::Document& api,
                                          const std::string& base_path) {
  return gateway::OperationPolicy(described_operations(api, base_path));
}

// The audit writer over the store the config names, or the start-up problem.
std::variant<std::unique_ptr<audit::Writer>, std::string> start_audit(const config::Audit& config) {
  auto opened = audit::open_store(config, audit::OpenMode::write);
  if (auto* problem = std::get_if<std::string>(&opened)) return *problem;
  audit::WriterOptions options;
  options.server = config.server;
  if (options.server.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    options.server = host[0] ? host : "codemode-mcp";
  }
  options.queue = config.queue;
  options.principal_share = config.queue_per_principal;
  options.on_failure = config.on_failure;
  options.retention = audit::Retention{config.max_age_days, std::uint64_t{config.max_mb} << 20};
  auto& store = std::get<std::unique_ptr<audit::Store>>(opened);
  spdlog::info("audit: recording to {} as server {} ({})", store->describe(), options.server,
               config.on_failure == config::Audit::OnFailure::fail_closed
                   ? "fail_closed: calls are refused while it is down"
                   : "drop: records are dropped while it is down and the queue is full");
  return std::make_unique<audit::Writer>(std::move(store), std::move(options));
}

// How long a shutdown lets running calls finish: a signal gives them the shutdown grace
// (an orchestrator waits for the process), stdin closing lets them all answer.
enum class Grace { bounded, unbounded };

}  // namespace

void settle_base_path(const openapi::Document& api, config::Config& config) {
  if (config.upstreams.empty() || config.upstreams.front().base_path) return;
  std::string path = openapi::server_base_paths(api).front();
  // A templated server ("https://{region}.example.com/{version}") names no one path.
  if (path.find('{') != std::string::npos) path.clear();
  config.upstreams.front().base_path = std::move(path);
}

void warn_unlike_servers(const openapi::Document& api, const config::Config& config) {
  const auto& root = *api.root;
  const auto servers = root.find("servers");
  if (config.upstreams.empty() || servers == root.end() || !servers->is_array() ||
      servers->empty()) {
    return;  // nothing configured, or a description that names no server
  }
  // The origins of the absolute, untemplated server URLs, in the form upstream origins take.
  std::vector<std::string> origins;
  for (const auto& server : *servers) {
    if (!server.is_object() || !server.contains("url") || !server["url"].is_string()) continue;
    const std::string url = server["url"].get<std::string>();
    const auto scheme = url.find("://");
    if (scheme == std::string::npos || url.find('{') != std::string::npos) continue;
    const auto parsed = net::parse_origin(url.substr(0, url.find_first_of("/?#", scheme + 3)),
                                          net::OriginForm::header);
    if (const auto* origin = std::get_if<net::Origin>(&parsed)) {
      const std::string text = origin->serialised();
      if (std::find(origins.begin(), origins.end(), text) == origins.end()) origins.push_back(text);
    }
  }
  const auto join = [](const std::vector<std::string>& items) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
    return out;
  };
  std::vector<std::string> configured;
  configured.reserve(config.upstreams.size());
  for (const auto& upstream : config.upstreams) configured.push_back(upstream.origin);
  const bool shared = std::any_of(configured.begin(), configured.end(), [&](const auto& origin) {
    return std::find(origins.begin(), origins.end(), origin) != origins.end();
  });
  if (!origins.empty() && !shared) {
    // Normal for a test double or a proxy; a mistake when the origin was mistyped.
    spdlog::warn(
        "upstreams: {} {} not among the description's servers ({}); the code is told to use "
        "relative URLs, and an absolute URL it copies from the description is refused",
        join(configured), configured.size() == 1 ? "is" : "are", join(origins));
  }
  const auto& base_path = config.upstreams.front().base_path;
  if (!base_path) return;  // settle_base_path() takes the servers' path
  std::vector<std::string> paths = openapi::server_base_paths(api);
  std::erase_if(paths, [](const std::string& path) { return path.find('{') != std::string::npos; });
  if (paths.empty() || std::find(paths.begin(), paths.end(), *base_path) != paths.end()) return;
  for (auto& path : paths) {
    if (path.empty()) path = "/";
  }
  spdlog::warn(
      "upstreams[0].base_path: {} is not the path of the description's servers ({}); relative "
      "URLs go under {}, and the description's paths are matched below it",
      base_path->empty() ? "\"\"" : *base_path, join(paths), base_path->empty() ? "/" : *base_path);
}

void log_upstreams(const config::Config& config, bool base_path_configured) {
  if (config.upstreams.empty()) {
    spdlog::warn(
        "no upstreams: every execute request is refused; add \"upstreams\": [{\"origin\": "
        "\"https://api.example.com\"}] to the config");
    return;
  }
  for (std::size_t i = 0; i < config.upstreams.size(); ++i) {
    const config::Upstream& upstream = config.upstreams[i];
    // Names only: never a value, which may be a credential.
    std::string injects;
    const auto add = [&injects](const std::string& what) {
      injects += (injects.empty() ? "" : ", ") + what;
    };
    for (const auto& header : upstream.headers) add(header.first);
    for (const auto& parameter : upstream.query) add("?" + parameter.first);
    if (upstream.token_exchange) add("Authorization (exchanged)");
    std::string line = "execute may call " + upstream.origin;
    if (i == 0) {
      const std::string base = upstream.base_path.value_or("");
      line += "; relative URLs go to " + upstream.origin + base + "/" +
              (base.empty()           ? std::string()
               : base_path_configured ? " (upstreams[0].base_path)"
                                      : " (the description's servers)");
    }
    line += injects.empty() ? "; injects nothing" : "; injects " + injects;
    spdlog::info("{}", line);
  }
}

ApiSummary summarize(const openapi::Document& api, const config::Config& config) {
  openapi::DescribeOptions options;
  for (const auto& upstream : config.upstreams) options.origins.push_back(upstream.origin);
  options.base_path = base_path_of(config);
  const config::Limits& limits = config.limits;
  options.cpu_ms = limits.cpu_ms;
  options.wall_ms = limits.wall_ms;
  options.heap_mb = limits.heap_mb;
  options.code_chars = limits.code_chars;
  options.result_chars = limits.result_chars;
  options.subrequests = limits.subrequests;
  options.spec_operations_only = config.policy.operations == config::Policy::Operations::spec;
  options.methods = config.policy.methods;
  ApiSummary summary{openapi::describe_search(api, options),
                     openapi::describe_execute(api, options), options.origins};
  // An empty list allows every method.
  const auto reads_only = [](const config::Policy& policy) {
    return !policy.methods.empty() &&
           std::all_of(policy.methods.begin(), policy.methods.end(),
                       [](const std::string& m) { return m == "GET" || m == "HEAD"; });
  };
  bool all_read_only = reads_only(config.policy);
  for (const auto& [name, settings] : config.principals) {
    if (settings.policy) all_read_only = all_read_only && reads_only(*settings.policy);
  }
  if (all_read_only) summary.execute_effect = ApiSummary::ExecuteEffect::reads_only;
  return summary;
}

gateway::OperationPolicyOptions operation_policy(const openapi::Document& api,
                                                 const config::Policy& policy,
                                                 const std::string& base_path) {
  gateway::OperationPolicyOptions options;
  if (policy.operations == config::Policy::Operations::spec) {
    options = described_operations(api, base_path);
  }
  for (const auto& method : policy.methods) {
    if (auto parsed = gateway::parse_method(method)) options.methods.insert(*parsed);
  }
  return options;
}

// Each configured principal's profile: the top-level upstreams with that principal's headers
// where it gives some, and its own policy or the top-level one.
std::map<std::string, gateway::PrincipalProfile> principal_profiles(const openapi::Document& api,
                                                                    const config::Config& config) {
  std::map<std::string, gateway::PrincipalProfile> profiles;
  for (const auto& [name, settings] : config.principals) {
    gateway::PrincipalProfile profile;
    profile.upstreams = config.upstreams;
    for (auto& upstream : profile.upstreams) {
      for (const auto& own : settings.upstreams) {
        if (own.origin == upstream.origin) {
          upstream.headers = own.headers;  // the principal's entry is its whole credential
          upstream.token_exchange = own.token_exchange;
          upstream.query = own.query;
          upstream.withheld = own.withheld;
        }
      }
    }
    profile.operations =
        operation_policy(api, settings.policy.value_or(config.policy), base_path_of(config));
    profiles.emplace(name, std::move(profile));
  }
  return profiles;
}

Daemon::Daemon(DaemonOptions options) : options_(std::move(options)) {}

int Daemon::run() {
  boost::asio::io_context io;
  // First: from here on SIGINT and SIGTERM are held for the handler below, however early they
  // come (an orchestrator may stop the server while it starts), instead of killing the process.
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  const bool base_path_configured =
      !options_.config.upstreams.empty() && options_.config.upstreams.front().base_path;
  settle_base_path(options_.api, options_.config);
  log_upstreams(options_.config, base_path_configured);
  const ToolCatalog tools(summarize(options_.api, options_.config), options_.config.limits);
  gateway::GatewayOptions gateway_options;
  gateway_options.upstreams = options_.config.upstreams;
  gateway_options.limits = options_.config.limits;
  gateway_options.ca_file = options_.config.ca_file;
  gateway_options.operations =
      operation_policy(options_.api, options_.config.policy, base_path_of(options_.config));
  gateway_options.principals = principal_profiles(options_.api, options_.config);
  if (const auto& oauth = options_.config.http.oauth) {
    gateway_options.request_scopes = {oauth->read_scopes, oauth->write_scopes, std::nullopt};
    if (oauth->spec_scopes)
      gateway_options.request_scopes.operations =
          described_operations(options_.api, base_path_of(options_.config));
  }
  for (const auto& principal : options_.config.principals) {
    const std::string& name = principal.first;  // not a structured binding: the lambda reads it
    const auto& tokens = options_.config.http.bearer_tokens;
    const bool named = std::any_of(tokens.begin(), tokens.end(),
                                   [&](const config::BearerToken& t) { return t.name == name; });
    // A misspelt name would leave that person on the shared credential without a word. What an
    // access token names cannot be checked before it comes.
    const bool from_tokens = options_.config.http.oauth &&
                             (name.starts_with("sub:") || name.starts_with("client:") ||
                              name.starts_with("sub-sha256:") ||
                              name.starts_with("client-sha256:") || name.starts_with("claim:"));
    if (!named && !from_tokens) {
      spdlog::warn("config: principals.{}: no bearer token has this name", name);
    }
  }
  auto exchanger = token_exchanger(io, options_.config);
  if (auto* problems = std::get_if<std::vector<std::string>>(&exchanger)) {
    for (const std::string& problem : *problems) spdlog::error("token_exchange: {}", problem);
    return 2;
  }
  const auto& exchange = std::get<std::shared_ptr<auth::TokenExchanger>>(exchanger);
  if (exchange) gateway_options.exchange_token = exchange_tokens(exchange);
  if (const auto& approve = options_.config.policy.approve) {
    auto approval = approval_settings(options_.api, *approve, base_path_of(options_.config));
    if (auto* problems = std::get_if<std::vector<std::string>>(&approval)) {
      for (const auto& problem : *problems) spdlog::error("config: {}", problem);
      return 2;
    }
    gateway_options.approval = std::move(std::get<gateway::ApprovalSettings>(approval));
    gateway_options.approval->timeout =
        std::chrono::milliseconds(options_.config.policy.approval_timeout_ms);
  }
  // MCP 2026-07-28 calls carry their approvals' state through the client, sealed with this key.
  std::shared_ptr<RequestStates> request_states;
  if (options_.config.policy.approve) {
    const auto& key = options_.config.policy.approval_key;
    if (key.empty()) {
      spdlog::info(
          "approvals: no policy.approval_key; 2026-07-28 retries must come back to this process");
    }
    request_states = std::make_shared<RequestStates>(
        key.empty() ? std::string() : *approval_key_bytes(key),
        std::chrono::seconds(options_.config.policy.approval_timeout_ms / 1000));
  }
  auto created = gateway::Gateway::create(io, std::move(gateway_options));
  if (auto* problems = std::get_if<std::vector<std::string>>(&created)) {
    for (const auto& problem : *problems) spdlog::error("gateway: {}", problem);
    return 2;
  }
  std::unique_ptr<gateway::Gateway> gateway = std::move(std::get<0>(created));
  auto built = openapi::DocumentImage::build(options_.api);
  if (auto* problem = std::get_if<std::string>(&built)) {
    spdlog::error("openapi: the document could not be shared with the sandbox: {}", *problem);
    return 2;
  }
  const openapi::DocumentImage image = std::move(std::get<openapi::DocumentImage>(built));
  // The audit trail, when configured: its writer outlives the sandbox, whose fetches it records.
  std::unique_ptr<audit::Writer> audit_writer;
  std::optional<CallAudit> trail;
  if (options_.config.audit) {
    auto started = start_audit(*options_.config.audit);
    if (auto* problem = std::get_if<std::string>(&started)) {
      spdlog::error("audit: {}", *problem);
      return 2;
    }
    audit_writer = std::move(std::get<std::unique_ptr<audit::Writer>>(started));
    trail.emplace(*audit_writer, audit_operations(options_.api, base_path_of(options_.config)),
                  gateway->policy());
  }
  std::vector<std::string> upstream_origins;
  upstream_origins.reserve(options_.config.upstreams.size());
  for (const auto& upstream : options_.config.upstreams)
    upstream_origins.push_back(upstream.origin);
  Metrics metrics(std::move(upstream_origins));
  // Traces: spans exported when configured; the trace context passed on either way.
  std::unique_ptr<SpanExporter> span_exporter;
  if (options_.config.tracing) {
    auto started = SpanExporter::start(*options_.config.tracing, options_.info.version,
                                       options_.config.ca_file);
    if (auto* problem = std::get_if<std::string>(&started)) {
      spdlog::error("{}", *problem);
      return 2;
    }
    span_exporter = std::move(std::get<std::unique_ptr<SpanExporter>>(started));
    spdlog::info("tracing: exporting spans to {}", span_exporter->endpoint());
  }
  Tracer tracer(span_exporter.get(), gateway->policy());
  // One observation point for every fetch: the tracer first, as it sets the request's
  // traceparent.
  sandbox::FetcherFactory fetch =
      observe_fetches(gateway_fetch(*gateway), {&tracer, &metrics, trail ? &*trail : nullptr});
  // From here on the sandbox reads the image; the parsed tree (GitHub's REST description: ~45 MB)
  // is not needed any more.
  options_.api = openapi::Document{};
  ::malloc_trim(0);
  // Where fetch('/x') goes, for `new Request('/x').url` to say so: the gateway's base, with
  // the base path ("http://127.0.0.1:8788/api/").
  std::string fetch_base = gateway->policy().base();
  const channel::JitMode jit =
      options_.config.sandbox.jitless ? channel::JitMode::jitless : channel::JitMode::enabled;
  sandbox::Sandbox sandbox(sandbox::SandboxOptions{
      .limits = options_.config.limits,
      .api = &image,
      .fetch = std::move(fetch),
      .fetch_base = std::move(fetch_base),
      .child_command = sandbox::engine_command(options_.engine_dir, sandbox::kIsolateAddon, jit),
      .executor = io.get_executor(),
      .child_stderr = options_.sandbox_stderr,
      .processes = options_.config.sandbox,
      .jit = jit});

  // One principal's tool calls in flight, running or queued.
  const std::size_t max_calls = std::size_t{options_.config.sandbox.principal_calls} +
                                options_.config.sandbox.principal_queue;

  std::optional<StdioTransport> stdio;
  std::shared_ptr<McpSession> stdio_session;
  bool stdout_gone = false;  // the stdio session's answers are lost: see its send, below
  if (options_.serve_stdio) {
    stdio.emplace(io.get_executor(), STDIN_FILENO, STDOUT_FILENO, options_.max_message_bytes);
  }

  std::optional<HttpServer> http;
  metrics.set_levels([&] {
    Metrics::Levels levels{sandbox.stats()};
    if (audit_writer) {
      const audit::Writer::Stats stats = audit_writer->stats();
      levels.audit = true;
      levels.audit_queue = stats.queued;
      levels.audit_dropped = stats.dropped;
    }
    if (span_exporter) {
      const SpanExporter::Stats stats = span_exporter->stats();
      levels.tracing = true;
      levels.spans_dropped = stats.dropped;
      levels.span_export_failures = stats.failures;
    }
    return levels;
  });
  if (options_.http) {
    HttpOptions http_options = *options_.http;
    http_options.metrics = [&] { return metrics.exposition(); };
    http_options.pass_access_token = exchange != nullptr;
    if (http_options.oauth) {  // the issuer's keys are fetched on `io` (auth/token_verifier.h)
      auto verifier = auth::TokenVerifier::create(io, *http_options.oauth, options_.config.ca_file);
      if (auto* problems = std::get_if<std::vector<std::string>>(&verifier)) {
        for (const std::string& problem : *problems) spdlog::error("http.oauth: {}", problem);
        return 2;
      }
      http_options.verifier = std::get<std::shared_ptr<auth::TokenVerifier>>(verifier);
      http_options.verifier->start();
    }
    // Each HTTP session answers every message on the exchange that carried it: no default Send.
    http.emplace(io, std::move(http_options),
                 [&](boost::asio::any_io_executor executor, std::string principal) {
                   auto session = std::make_shared<McpSession>(
                       std::move(executor), tools, sandbox, options_.info,
                       [](const std::string&) {}, std::move(principal), max_calls,
                       SessionAudit{trail ? &*trail : nullptr, "http", &metrics, &tracer});
                   session->use_request_states(request_states);
                   return session;
                 });
    if (auto problem = http->start()) {
      spdlog::error("http: {}", *problem);
      return 2;
    }
  }

  // Declared after `metrics`, whose exposition it serves, so it closes first.
  std::optional<MetricsListener> metrics_listener;
  if (options_.metrics) {
    metrics_listener.emplace(io, MetricsListenerOptions{
                                     .endpoint = *options_.metrics,
                                     .exposition = [&] { return metrics.exposition(); },
                                 });
    if (auto problem = metrics_listener->start()) {
      spdlog::error("metrics: {}", *problem);
      return 2;
    }
    const std::string url = endpoint_url(metrics_listener->local_endpoint());
    spdlog::info("metrics on {}metrics", url.substr(0, url.size() - 3));
  }

  bool stopping = false;
  int busy = 0;  // transports still finishing their calls
  boost::asio::steady_timer grace(io);
  auto one_done = [&] {
    if (--busy > 0) return;
    grace.cancel();
    io.stop();
  };
  auto shut_down = [&](std::string_view why, Grace grace_period) {
    if (stopping) return;
    stopping = true;
    spdlog::info("{}: finishing running calls", why);
    if (stdio) stdio->stop();
    if (grace_period == Grace::bounded) {
      grace.expires_after(options_.shutdown_grace);
      grace.async_wait([&](boost::system::error_code ec) {
        if (ec) return;
        // Every accepted call is answered: the queued ones and the running ones end now with an
        // error that says why, and the transports send those answers before the server stops.
        spdlog::warn("shutdown grace period over; ending the calls still running or queued");
        sandbox.stop_all("the server is shutting down");
        grace.expires_after(kAnswerFlush);
        grace.async_wait([&](boost::system::error_code ec) {
          if (ec) return;
          spdlog::warn("answers not sent within {} ms of shutdown; stopping", kAnswerFlush.count());
          io.stop();
        });
      });
    }
    busy = (stdio_session ? 1 : 0) + (http ? 1 : 0);
    if (stdio_session) stdio_session->when_idle(one_done);
    if (http) http->drain(one_done);
  };

  if (stdio) {
    // Once stdout is gone (closed, or a client that left 16 MiB unread) nobody reads what the
    // stdio session answers: it takes no more lines, and the server stops as at stdin EOF,
    // unless it serves HTTP as well, which goes on. Posted: shutting down waits for this
    // session, which is inside its own send here.
    stdio_session = std::make_shared<McpSession>(
        io.get_executor(), tools, sandbox, options_.info,
        [&](const std::string& message) {
          if (stdio->write_line(message) || stdout_gone) return;
          stdout_gone = true;
          spdlog::warn("stdout is gone; stdio answers are lost and stdin is no longer read");
          boost::asio::post(io, [&] {
            if (http) return stdio->stop();
            shut_down("stdout is gone", Grace::unbounded);
          });
        },
        std::string(config::kStdioPrincipal), max_calls,
        SessionAudit{trail ? &*trail : nullptr, "stdio", &metrics, &tracer});
    stdio_session->use_request_states(request_states);
  }

  signals.async_wait([&](boost::system::error_code ec, int signal) {
    if (!ec) shut_down(signal == SIGINT ? "SIGINT" : "SIGTERM", Grace::bounded);
  });
  // Once the signal handler is armed: whoever waits for this line (a supervisor, a test) may
  // send SIGTERM at once, and it drains.
  if (http) {
    spdlog::info("listening on {}{}", endpoint_url(http->local_endpoint()),
                 options_.http->mode == HttpMode::stateless ? " (stateless)" : "");
  }

  if (stdio) {
    stdio->start(StdioHandlers{
        .on_line =
            [&](const std::string& line) {
              if (!stopping && !stdout_gone) stdio_session->handle(line);
            },
        .on_oversize =
            [&](std::size_t limit) {
              if (!stopping) stdio_session->reject_oversize(limit);
            },
        .on_eof = [&] { shut_down("stdin closed", Grace::unbounded); },
    });
  }

  io.run();
  if (stdio) stdio->stop();
  if (audit_writer) {
    audit_writer->stop();
    const audit::Writer::Stats stats = audit_writer->stats();
    spdlog::info("audit: {} records written, {} dropped", stats.written, stats.dropped);
  }
  if (span_exporter) {
    span_exporter->stop();
    const SpanExporter::Stats stats = span_exporter->stats();
    spdlog::info("tracing: {} spans exported, {} dropped", stats.exported, stats.dropped);
  }
  spdlog::info("stopped");
  return 0;
}

}  // namespace codemode::server
