#include "server/assemble.h"

#include <malloc.h>

#include <unistd.h>

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

#include "base/check.h"
#include "channel/call_control.h"
#include "gateway/call_scope.h"
#include "gateway/operation_policy.h"
#include "gateway/request_check.h"
#include "observe/fetch_observer.h"
#include "openapi/describe.h"
#include "openapi/operations.h"
#include "server/upstreams.h"

namespace codemode::server {

std::string path_of(const config::Config& config, const config::Api& api) {
  const bool single = config.apis.size() == 1 && api.name == config::kDefaultApiName;
  return single ? std::string() : "apis." + api.name + ".";
}

namespace {

// How far past an execute call's wall deadline the gateway gives up on its fetch: the isolate's
// watchdog ends the call at its deadline, so a fetch still in flight then is reported as the
// timeout it is, not as a fetch that failed. (The isolate's deadline counts from the Run frame's
// arrival in the sandbox process, a little after the fetcher is made.)
constexpr std::chrono::milliseconds kFetchDeadlineSlack{500};

// The sandbox's way to the gateway, the one place on a request's way that opens its call's
// scope: each execute call gets its own subrequest budget (held by its fetcher; the gateway
// spends it inside fetch()), a deadline past its own wall deadline, whose call it is for the
// gateway (its principal's profile, the token's scopes, its approver, the token itself), and
// its audit id and trace for `observers`, which see each request before the gateway does.
sandbox::FetcherFactory gateway_fetch(gateway::Gateway& gateway,
                                      std::vector<FetchObserver*> observers) {
  return [&gateway, observers = std::move(observers)](
             const config::Limits& limits,
             const std::shared_ptr<const gateway::CallScope>& scope) -> channel::Fetcher {
    CODEMODE_CHECK(scope != nullptr, "McpSession::call_tool gives every execute call its scope");
    auto budget = std::make_shared<gateway::CallBudget>(limits.subrequests);
    const auto deadline =
        gateway::Clock::now() + std::chrono::milliseconds(limits.wall_ms) + kFetchDeadlineSlack;
    channel::Fetcher fetch = [&gateway, budget = std::move(budget), deadline, scope](
                                 gateway::OutboundRequest outbound, channel::FetchDone done) {
      gateway::WaitHook waiting = done.waiting();
      std::shared_ptr<gateway::FetchAbort> abort = done.abort();
      gateway.fetch(std::move(outbound), *budget, deadline, std::move(done), scope->caller, waiting,
                    abort);
    };
    return observe_fetches(std::move(fetch),
                           ObservedCall{scope->audit_id, scope->caller.principal,
                                        scope->traceparent, scope->tracestate},
                           observers);
  };
}

// The token exchanger when some upstream's token is exchanged for the caller's (config
// `token_exchange`, which the config allows only with http.oauth); null when none is.
std::variant<std::shared_ptr<auth::TokenExchanger>, std::vector<std::string>> token_exchanger(
    boost::asio::io_context& io, const config::Config& config) {
  bool wanted = false;
  for (const auto& api : config.apis) {
    for (const auto& upstream : api.upstreams) wanted |= upstream.token_exchange.has_value();
    for (const auto& entry : api.principals) {
      for (const auto& upstream : entry.second.upstreams)
        wanted |= upstream.token_exchange.has_value();
    }
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
std::string base_path_of(const config::Api& config) {
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

// Each API's share of the sandbox settings that bound the server as a whole: each API has a
// pool of its own (a process maps one API's document and reaches one API's gateway), so the
// processes and their memory are divided equally between the APIs.
config::SandboxSettings share_of(config::SandboxSettings settings, std::size_t apis) {
  if (apis <= 1) return settings;
  const auto count = static_cast<std::uint32_t>(apis);
  settings.max_processes = std::max(1U, settings.max_processes / count);
  if (settings.memory_mb == 0) {  // 0: half of the machine's memory (config.h), divided too
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page_size = ::sysconf(_SC_PAGE_SIZE);
    const std::uint64_t half =
        pages > 0 && page_size > 0
            ? (static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size) / 2) >> 20
            : 0;
    settings.memory_mb = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(half, config::SandboxSettings::kMemoryMbRange.max));
  }
  if (settings.memory_mb != 0) settings.memory_mb = std::max(1U, settings.memory_mb / count);
  return settings;
}

// What the scrapes read of every API's sandbox together.
sandbox::PoolStats sum_of(const std::vector<std::unique_ptr<ServedApi>>& apis) {
  sandbox::PoolStats total;
  for (const auto& api : apis) {
    const sandbox::PoolStats stats = api->sandbox->stats();
    total.running += stats.running;
    total.queued += stats.queued;
    total.processes += stats.processes;
    total.starting += stats.starting;
    total.started += stats.started;
    for (const auto& [why, count] : stats.retired) total.retired[why] += count;
  }
  return total;
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
                                                                    const config::Api& config) {
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

// A misspelt principal's name would leave that person on the shared credential without a word.
// What an access token names cannot be checked before it comes.
void warn_unknown_principals(const config::Config& config, const config::Api& api,
                             const std::string& path) {
  for (const auto& principal : api.principals) {
    const std::string& name = principal.first;  // not a structured binding: the lambda reads it
    const auto& tokens = config.http.bearer_tokens;
    const bool named = std::any_of(tokens.begin(), tokens.end(),
                                   [&](const config::BearerToken& t) { return t.name == name; });
    const bool from_tokens =
        config.http.oauth && (name.starts_with("sub:") || name.starts_with("client:") ||
                              name.starts_with("sub-sha256:") ||
                              name.starts_with("client-sha256:") || name.starts_with("claim:"));
    if (!named && !from_tokens) {
      spdlog::warn("config: {}principals.{}: no bearer token has this name", path, name);
    }
  }
}

// One API's parts but its sandbox (which starts processes: built once nothing went wrong),
// from its config and description; its problems are added to `problems`.
std::unique_ptr<ServedApi> build_api(boost::asio::io_context& io, config::Config& config,
                                     config::Api& api, const openapi::Document& document,
                                     const Parts& parts, std::vector<std::string>& problems) {
  const std::string path = path_of(config, api);
  auto served = std::make_unique<ServedApi>();
  served->name = api.name;
  const bool base_path_configured = !api.upstreams.empty() && api.upstreams.front().base_path;
  settle_base_path(document, api);
  log_upstreams(api, base_path_configured, path);
  warn_unknown_principals(config, api, path);
  served->tools = std::make_unique<ToolCatalog>(summarize(document, api), api.limits);
  const std::string base_path = base_path_of(api);
  gateway::GatewayOptions gateway_options;
  gateway_options.upstreams = api.upstreams;
  gateway_options.limits = api.limits;
  gateway_options.ca_file = config.ca_file;
  gateway_options.operations = operation_policy(document, api.policy, base_path);
  gateway_options.principals = principal_profiles(document, api);
  if (const auto& oauth = config.http.oauth) {
    gateway_options.request_scopes = {oauth->read_scopes, oauth->write_scopes, std::nullopt};
    if (oauth->spec_scopes)
      gateway_options.request_scopes.operations = described_operations(document, base_path);
  }
  if (parts.exchanger) gateway_options.exchange_token = exchange_tokens(parts.exchanger);
  if (const auto& approve = api.policy.approve) {
    auto approval = approval_settings(document, *approve, base_path);
    if (auto* found = std::get_if<std::vector<std::string>>(&approval)) {
      for (const auto& problem : *found) problems.push_back(path + problem);
    } else {
      gateway_options.approval = std::move(std::get<gateway::ApprovalSettings>(approval));
      gateway_options.approval->timeout = std::chrono::milliseconds(api.policy.approval_timeout_ms);
    }
    // MCP 2026-07-28 calls carry their approvals' state through the client, sealed with this
    // API's key and its name: a state sealed for one API does not open at another, even under
    // the same key. (The single-API form seals none, as before: its fleet's replicas agree.)
    const auto& key = api.policy.approval_key;
    if (key.empty()) {
      spdlog::info(
          "approvals: no {}policy.approval_key; 2026-07-28 retries must come back to this process",
          path);
    }
    served->request_states = std::make_shared<RequestStates>(
        key.empty() ? std::string() : *approval_key_bytes(key),
        std::chrono::seconds(api.policy.approval_timeout_ms / 1000), kMaxUsedStatesPerPrincipal,
        [] { return std::chrono::system_clock::now(); }, path.empty() ? std::string() : api.name);
  }
  auto created = gateway::Gateway::create(io, std::move(gateway_options));
  if (auto* found = std::get_if<std::vector<std::string>>(&created)) {
    for (const auto& problem : *found) problems.push_back(label_of(path) + "gateway: " + problem);
  } else {
    served->gateway = std::move(std::get<0>(created));
  }
  auto built = openapi::DocumentImage::build(document);
  if (auto* problem = std::get_if<std::string>(&built)) {
    problems.push_back(label_of(path) +
                       "openapi: the document could not be shared with the sandbox: " + *problem);
  } else {
    served->image = std::make_unique<openapi::DocumentImage>(
        std::move(std::get<openapi::DocumentImage>(built)));
  }
  if (served->gateway) {
    if (parts.audit_writer) {
      served->trail.emplace(*parts.audit_writer, audit_operations(document, base_path),
                            served->gateway->policy());
    }
    served->tracer = std::make_unique<Tracer>(parts.span_exporter.get(), served->gateway->policy());
  }
  served->max_calls = std::size_t{config.sandbox.principal_calls} + config.sandbox.principal_queue;
  return served;
}

}  // namespace

ApiSummary summarize(const openapi::Document& api, const config::Api& config) {
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

std::variant<std::vector<openapi::Document>, std::vector<std::string>> load_descriptions(
    const config::Config& config, std::map<std::string, openapi::Document> built_in) {
  std::vector<openapi::Document> documents;
  std::vector<std::string> problems;
  for (const auto& api : config.apis) {
    if (auto it = built_in.find(api.name); it != built_in.end() && api.openapi.empty()) {
      documents.push_back(std::move(it->second));
      continue;
    }
    openapi::LoadResult loaded = openapi::load_file(api.openapi);
    // Under the key that named the file: the user looks at the config first.
    for (const auto& problem : loaded.problems) {
      problems.push_back(path_of(config, api) + "openapi: " + problem);
    }
    if (loaded.document) documents.push_back(std::move(*loaded.document));
  }
  if (!problems.empty()) return problems;
  return documents;
}

std::shared_ptr<McpSession> ServedApi::session(boost::asio::any_io_executor executor,
                                               const ServerInfo& info, McpSession::Send send,
                                               std::string principal, std::string transport,
                                               Metrics& metrics) {
  auto made = std::make_shared<McpSession>(
      std::move(executor), *tools, *sandbox, info, std::move(send), std::move(principal), max_calls,
      SessionAudit{trail ? &*trail : nullptr, std::move(transport), &metrics, tracer.get()});
  made->use_request_states(request_states);
  return made;
}

void Parts::stop_all(const std::string& message) {
  for (const auto& api : apis) api->sandbox->stop_all(message);
}

namespace {

// What every API shares, started before any API is built: the token exchanger, the audit writer
// (it outlives the sandboxes, whose fetches it records), the span exporter and the metrics.
void start_shared(boost::asio::io_context& io, const config::Config& config,
                  const std::string& version, Parts& parts, std::vector<std::string>& problems) {
  auto exchanger = token_exchanger(io, config);
  if (auto* found = std::get_if<std::vector<std::string>>(&exchanger)) {
    for (const std::string& problem : *found) problems.push_back("token_exchange: " + problem);
  } else {
    parts.exchanger = std::get<std::shared_ptr<auth::TokenExchanger>>(exchanger);
  }
  // The audit trail, when configured.
  if (config.audit) {
    auto started = start_audit(*config.audit);
    if (auto* problem = std::get_if<std::string>(&started)) {
      problems.push_back("audit: " + *problem);
    } else {
      parts.audit_writer = std::move(std::get<std::unique_ptr<audit::Writer>>(started));
    }
  }
  // Traces: spans exported when configured; the trace context passed on either way.
  if (config.tracing) {
    auto started = SpanExporter::start(*config.tracing, version, config.ca_file);
    if (auto* problem = std::get_if<std::string>(&started)) {
      problems.push_back(*problem);
    } else {
      parts.span_exporter = std::move(std::get<std::unique_ptr<SpanExporter>>(started));
      spdlog::info("tracing: exporting spans to {}", parts.span_exporter->endpoint());
    }
  }
  std::vector<std::string> upstream_origins;
  for (const auto& api : config.apis) {
    for (const auto& upstream : api.upstreams) {
      if (std::find(upstream_origins.begin(), upstream_origins.end(), upstream.origin) ==
          upstream_origins.end()) {
        upstream_origins.push_back(upstream.origin);
      }
    }
  }
  parts.metrics = std::make_unique<Metrics>(std::move(upstream_origins));
}

// The HTTP listener, bound (not yet served): one API at /mcp, several each at /mcp/NAME, each
// with its OAuth verifier and its claim: principals.
void listen_http(boost::asio::io_context& io, const DaemonOptions& options, Parts& built,
                 std::vector<std::string>& problems) {
  const config::Config& config = options.config;
  HttpOptions http_options = *options.http;
  http_options.metrics = [&built] { return built.metrics->exposition(); };
  http_options.pass_access_token = built.exchanger != nullptr;
  // The issuer's keys are fetched on `io` (auth/token_verifier.h), by a verifier per resource.
  const auto verifier_of = [&](const config::OAuth& oauth) {
    std::shared_ptr<auth::TokenVerifier> made;
    auto verifier = auth::TokenVerifier::create(io, oauth, config.ca_file);
    if (auto* found = std::get_if<std::vector<std::string>>(&verifier)) {
      for (const std::string& problem : *found) problems.push_back("http.oauth: " + problem);
    } else {
      made = std::get<std::shared_ptr<auth::TokenVerifier>>(verifier);
      made->start();
    }
    return made;
  };
  // The config's `principals` keys of the form "claim:NAME=VALUE", each API's own.
  const auto claims_of = [](const config::Api& api) {
    std::vector<std::string> claims;
    for (const auto& entry : api.principals) {
      if (entry.first.starts_with("claim:")) claims.push_back(entry.first);
    }
    return claims;
  };
  if (config.apis.size() == 1) {
    if (http_options.oauth) http_options.verifier = verifier_of(*http_options.oauth);
    http_options.claim_profiles = claims_of(config.apis.front());
  } else {
    // Each API at /mcp/NAME. Its resource is http.oauth.resource (the URL of /mcp) with
    // "/NAME": a token's audience names the one API it was issued for.
    for (const auto& api : config.apis) {
      HttpApi served{"/mcp/" + api.name, http_options.oauth, nullptr, claims_of(api)};
      if (served.oauth) {
        std::string& resource = served.oauth->resource;
        if (resource.ends_with('/')) resource.pop_back();
        resource += "/" + api.name;
        served.verifier = verifier_of(*served.oauth);
      }
      http_options.apis.push_back(std::move(served));
    }
  }
  // Each HTTP session answers every message on the exchange that carried it: no default Send.
  built.http.emplace(io, std::move(http_options),
                     [&built, info = options.info](boost::asio::any_io_executor executor,
                                                   std::string principal, std::size_t api) {
                       return built.apis.at(api)->session(
                           std::move(executor), info, [](const std::string&) {},
                           std::move(principal), "http", *built.metrics);
                     });
  if (auto problem = built.http->start()) problems.push_back("http: " + *problem);
}

// `--metrics HOST:PORT`: /metrics on a listener of its own, bound.
void listen_metrics(boost::asio::io_context& io, const HttpEndpoint& endpoint, Parts& built,
                    std::vector<std::string>& problems) {
  built.metrics_listener.emplace(io,
                                 MetricsListenerOptions{
                                     .endpoint = endpoint,
                                     .exposition = [&built] { return built.metrics->exposition(); },
                                 });
  if (auto problem = built.metrics_listener->start()) {
    problems.push_back("metrics: " + *problem);
  } else {
    const std::string url = endpoint_url(built.metrics_listener->local_endpoint());
    spdlog::info("metrics on {}metrics", url.substr(0, url.size() - 3));
  }
}

// Each API's sandbox, its fetches observed and sent to its gateway; each starts its spare
// processes, its share of config.sandbox.
void start_sandboxes(boost::asio::io_context& io, const DaemonOptions& options, Parts& built) {
  const config::Config& config = options.config;
  const channel::JitMode jit =
      config.sandbox.jitless ? channel::JitMode::jitless : channel::JitMode::enabled;
  const config::SandboxSettings processes = share_of(config.sandbox, config.apis.size());
  for (std::size_t i = 0; i < config.apis.size(); ++i) {
    ServedApi& api = *built.apis[i];
    // One observation point for every fetch: the tracer first, as it sets the request's
    // traceparent.
    sandbox::FetcherFactory fetch = gateway_fetch(
        *api.gateway, {api.tracer.get(), built.metrics.get(), api.trail ? &*api.trail : nullptr});
    api.sandbox = std::make_unique<sandbox::Sandbox>(sandbox::SandboxOptions{
        .limits = config.apis[i].limits,
        .api = api.image.get(),
        .fetch = std::move(fetch),
        // Where fetch('/x') goes, for `new Request('/x').url` to say so: the gateway's base,
        // with the base path ("http://127.0.0.1:8788/api/").
        .fetch_base = api.gateway->policy().base(),
        .child_command = sandbox::engine_command(options.engine_dir, sandbox::kIsolateAddon, jit),
        .executor = io.get_executor(),
        .child_stderr = options.sandbox_stderr,
        .processes = processes,
        .jit = jit});
  }
}

// The levels /metrics reports beside its counters, read when it is scraped.
void watch_levels(Parts& built) {
  built.metrics->set_levels([&built] {
    Metrics::Levels levels{sum_of(built.apis)};
    if (built.audit_writer) {
      const audit::Writer::Stats stats = built.audit_writer->stats();
      levels.audit = true;
      levels.audit_queue = stats.queued;
      levels.audit_dropped = stats.dropped;
    }
    if (built.span_exporter) {
      const SpanExporter::Stats stats = built.span_exporter->stats();
      levels.tracing = true;
      levels.spans_dropped = stats.dropped;
      levels.span_export_failures = stats.failures;
    }
    return levels;
  });
}

}  // namespace

std::variant<std::unique_ptr<Parts>, std::vector<std::string>> assemble(boost::asio::io_context& io,
                                                                        DaemonOptions& options) {
  config::Config& config = options.config;
  CODEMODE_CHECK(options.apis.size() == config.apis.size() && !config.apis.empty(),
                 "load_descriptions gives one description per configured API");
  auto parts = std::make_unique<Parts>();
  std::vector<std::string> problems;

  start_shared(io, config, options.info.version, *parts, problems);

  for (std::size_t i = 0; i < config.apis.size(); ++i) {
    parts->apis.push_back(build_api(io, config, config.apis[i], options.apis[i], *parts, problems));
    // From here on the sandbox reads the image; the parsed tree (GitHub's REST description:
    // ~45 MB) is not needed any more.
    options.apis[i] = openapi::Document{};
    ::malloc_trim(0);
  }

  Parts& built = *parts;
  if (options.http) listen_http(io, options, built, problems);
  if (options.metrics) listen_metrics(io, *options.metrics, built, problems);
  if (!problems.empty()) return problems;

  // Last, once nothing went wrong: each API's sandbox starts its spare processes.
  start_sandboxes(io, options, built);
  watch_levels(built);
  return parts;
}

}  // namespace codemode::server
