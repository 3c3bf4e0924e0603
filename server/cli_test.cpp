#include "server/cli.h"

#include <catch2/catch.hpp>

#include <initializer_list>
#include <string_view>
#include <vector>

using namespace codemode::server;

namespace {

CommandLine parse(std::initializer_list<std::string_view> words) {
  const std::vector<std::string_view> args(words);
  return parse_command_line(args);
}

ServeOptions serve(std::initializer_list<std::string_view> words) {
  CommandLine command = parse(words);
  REQUIRE(std::holds_alternative<ServeOptions>(command));
  return std::get<ServeOptions>(command);
}

std::string error_of(std::initializer_list<std::string_view> words) {
  CommandLine command = parse(words);
  REQUIRE(std::holds_alternative<CliError>(command));
  return std::get<CliError>(command).message;
}

}  // namespace

TEST_CASE("no arguments serve the embedded demo over stdio", "[server][cli]") {
  const ServeOptions options = serve({});
  CHECK_FALSE(options.config_file);
  CHECK_FALSE(options.http);
  CHECK(options.log_level == "info");
  CHECK_FALSE(options.jitless);
}

TEST_CASE("every option lands in its field", "[server][cli]") {
  const ServeOptions options =
      serve({"--config", "api.json", "--http", ":8080", "--stdio", "--http-stateless",
             "--log-level", "debug", "--jitless", "--allow-unauthenticated-network-access"});
  CHECK(options.config_file == "api.json");
  REQUIRE(options.http);
  CHECK(options.http->host == "127.0.0.1");
  CHECK(options.http->port == 8080);
  CHECK(options.stdio_too);
  CHECK(options.http_mode == HttpMode::stateless);
  CHECK(options.log_level == "debug");
  CHECK(options.jitless);
  CHECK(options.allow_unauthenticated_network_access);
}

TEST_CASE("an option's value may follow an equals sign, and --config comes once", "[server][cli]") {
  const ServeOptions options = serve({"--config=api.json", "--http=:8080", "--log-level=debug"});
  CHECK(options.config_file == "api.json");
  REQUIRE(options.http);
  CHECK(options.http->port == 8080);
  CHECK(options.log_level == "debug");
  CHECK(serve({"--config=a=b.json"}).config_file == "a=b.json");
  CHECK(error_of({"--config", "a.json", "--config", "b.json"}) ==
        "--config is given twice; one config file is read (it names everything)");
  CHECK(error_of({"--jitless=yes"}) == "--jitless takes no value");
  CHECK(error_of({"--bogus=1"}) == "unknown argument '--bogus=1'");
}

TEST_CASE("help and version win at once, the sandbox report after the checks", "[server][cli]") {
  CHECK(std::get<CliAction>(parse({"--help", "--bogus"})) == CliAction::help);
  CHECK(std::get<CliAction>(parse({"-h"})) == CliAction::help);
  CHECK(std::get<CliAction>(parse({"--jitless", "--version"})) == CliAction::version);
  CHECK_FALSE(std::get<SandboxReport>(parse({"--sandbox-report"})).required_layers);
  // An error before --help is reported: arguments are read in order.
  CHECK(error_of({"--bogus", "--help"}) == "unknown argument '--bogus'");
  CHECK(error_of({"--sandbox-report", "--stdio"}) ==
        "--stdio only makes sense with --http (stdio is the default)");
}

TEST_CASE("usage errors say what is wrong in one line", "[server][cli]") {
  CHECK(error_of({"--config"}) == "--config needs a file");
  CHECK(error_of({"--log-level"}) == "--log-level needs a level");
  CHECK(error_of({"--log-level", "loud"}) == "unknown log level 'loud'");
  CHECK(error_of({"--http"}) == "--http needs HOST:PORT, e.g. 127.0.0.1:8080 or :8080");
  CHECK(error_of({"--http", "example.com:80"}) ==
        "--http: 'example.com:80' is not HOST:PORT (HOST an IP address or localhost, PORT "
        "0-65535)");
  CHECK(error_of({"--stdio"}) == "--stdio only makes sense with --http (stdio is the default)");
  CHECK(error_of({"--http-stateless"}) ==
        "--http-stateless and --allow-unauthenticated-network-access need --http");
  CHECK(error_of({"--allow-unauthenticated-network-access"}) ==
        "--http-stateless and --allow-unauthenticated-network-access need --http");
  CHECK(error_of({"serve"}) == "unknown argument 'serve'");
  CHECK(error_of({"--metrics"}) == "--metrics needs HOST:PORT, e.g. 127.0.0.1:9464 or :9464");
  CHECK(error_of({"--metrics", "0.0.0.0:99999"}) ==
        "--metrics: '0.0.0.0:99999' is not HOST:PORT (HOST an IP address or localhost, PORT "
        "0-65535)");
}

TEST_CASE("a metrics address of its own, with stdio or with --http", "[server][cli]") {
  const ServeOptions alone = serve({"--metrics", ":9464"});
  REQUIRE(alone.metrics);
  CHECK(alone.metrics->host == "127.0.0.1");
  CHECK(alone.metrics->port == 9464);
  CHECK_FALSE(alone.http);
  const ServeOptions both = serve({"--http", ":8080", "--metrics", "[::1]:0"});
  REQUIRE(both.metrics);
  CHECK(both.metrics->host == "::1");
  CHECK(both.http->port == 8080);
  CHECK_FALSE(serve({}).metrics);
}

TEST_CASE("a non-loopback bind needs a token or the long opt-out", "[server][cli]") {
  CHECK_FALSE(refuse_network_bind(serve({}), 0));
  CHECK_FALSE(refuse_network_bind(serve({"--http", "127.0.0.1:0"}), 0));
  CHECK_FALSE(refuse_network_bind(serve({"--http", "[::1]:0"}), 0));
  const auto refusal = refuse_network_bind(serve({"--http", "0.0.0.0:8080"}), 0);
  REQUIRE(refusal);
  CHECK(refusal->starts_with("refusing to serve --http on 0.0.0.0, which is not a loopback"));
  CHECK(refusal->find("set http.tokens (or http.bearer_tokens) in the config") !=
        std::string::npos);
  CHECK_FALSE(refuse_network_bind(serve({"--http", "0.0.0.0:8080"}), 1));
  CHECK_FALSE(refuse_network_bind(
      serve({"--http", "0.0.0.0:8080", "--allow-unauthenticated-network-access"}), 0));
}

TEST_CASE("the required sandbox layers are all, none or a list of layers", "[server][cli]") {
  CHECK_FALSE(serve({}).required_layers);
  CHECK(serve({"--require-sandbox-layers", "all"}).required_layers ==
        codemode::sandbox::LayerSet::all());
  CHECK(serve({"--require-sandbox-layers", "none"}).required_layers ==
        codemode::sandbox::LayerSet{});
  const auto two = serve({"--require-sandbox-layers", "namespaces,empty-root"}).required_layers;
  REQUIRE(two);
  CHECK(two->contains(codemode::sandbox::Layer::namespaces));
  CHECK(two->contains(codemode::sandbox::Layer::empty_root));
  CHECK_FALSE(two->contains(codemode::sandbox::Layer::seccomp));
  // The last one given wins, as for every option with a value.
  CHECK(serve({"--require-sandbox-layers", "all", "--require-sandbox-layers", "seccomp"})
            .required_layers != codemode::sandbox::LayerSet::all());

  CHECK(error_of({"--require-sandbox-layers"}) ==
        "--require-sandbox-layers needs a list, e.g. all");
  CHECK(error_of({"--require-sandbox-layers", "namespace"}) ==
        "--require-sandbox-layers: 'namespace' is not a sandbox layer (known: all, none, process, "
        "namespaces, rlimits, address-space, empty-root, no-new-privs, seccomp)");
}

TEST_CASE("a sandbox report carries the required layers", "[server][cli]") {
  const auto report =
      std::get<SandboxReport>(parse({"--require-sandbox-layers", "all", "--sandbox-report"}));
  CHECK(report.required_layers == codemode::sandbox::LayerSet::all());
}

TEST_CASE("the flag wins over CODEMODE_REQUIRE_SANDBOX_LAYERS, which wins over none",
          "[server][cli]") {
  using codemode::sandbox::LayerSet;
  CHECK(std::get<LayerSet>(required_layers(std::nullopt, nullptr)).empty());
  CHECK(std::get<LayerSet>(required_layers(std::nullopt, "all")) == LayerSet::all());
  CHECK(std::get<LayerSet>(required_layers(LayerSet{}, "all")).empty());
  CHECK(std::get<LayerSet>(required_layers(LayerSet::all(), "none")) == LayerSet::all());
  CHECK(std::get<CliError>(required_layers(std::nullopt, "every")).message ==
        "CODEMODE_REQUIRE_SANDBOX_LAYERS: 'every' is not a sandbox layer (known: all, none, "
        "process, namespaces, rlimits, address-space, empty-root, no-new-privs, seccomp)");
  // An invalid variable is ignored when the flag decides.
  CHECK(std::get<LayerSet>(required_layers(LayerSet::all(), "every")) == LayerSet::all());
}

TEST_CASE("a health check takes HOST:PORT and nothing else", "[server][cli]") {
  const auto probe = std::get<Healthcheck>(parse({"--healthcheck", ":8080"}));
  CHECK(probe.endpoint.host == "127.0.0.1");
  CHECK(probe.endpoint.port == 8080);
  CHECK(std::get<Healthcheck>(parse({"--healthcheck", "[::1]:9"})).endpoint.host == "::1");
  CHECK(error_of({"--healthcheck"}) == "--healthcheck takes HOST:PORT and no other option");
  CHECK(error_of({"--healthcheck", ":8080", "--jitless"}) ==
        "--healthcheck takes HOST:PORT and no other option");
  CHECK(error_of({"--jitless", "--healthcheck", ":8080"}) ==
        "--healthcheck takes HOST:PORT and no other option");
  CHECK(error_of({"--healthcheck", "http://127.0.0.1:8080/healthz"}) ==
        "--healthcheck: 'http://127.0.0.1:8080/healthz' is not HOST:PORT (HOST an IP address or "
        "localhost, PORT 0-65535)");
}

TEST_CASE("the usage text names every option", "[server][cli]") {
  for (const std::string_view option :
       {"--config", "--http", "--stdio", "--http-stateless",
        "--allow-unauthenticated-network-access", "--log-level", "--sandbox-report", "--jitless",
        "--version", "--help", "--require-sandbox-layers", "CODEMODE_REQUIRE_SANDBOX_LAYERS",
        "--healthcheck", "--metrics"}) {
    CHECK(usage_text().find(option) != std::string_view::npos);
  }
  // The opt-out says which config keys make it unnecessary.
  CHECK(usage_text().find("http.tokens") != std::string_view::npos);
  CHECK(usage_text().find("http.bearer_tokens") != std::string_view::npos);
}

TEST_CASE("audit reads its own grammar: an action, --config and filters in any order",
          "[server][cli][audit]") {
  using codemode::audit::ReadCommand;
  const CommandLine command = parse({"audit",       "query",  "--config", "c.json",
                                     "--since",     "15m",    "--until",  "2026-12-03T10:00:00Z",
                                     "--principal", "alice",  "--tool",   "execute",
                                     "--outcome",   "policy", "--path",   "/orders",
                                     "--server",    "web-1",  "--kind",   "request",
                                     "--limit",     "50",     "--format", "table"});
  REQUIRE(std::holds_alternative<ReadCommand>(command));
  ReadCommand expected;
  expected.action = ReadCommand::Action::query;
  expected.config_file = "c.json";
  expected.since = "15m";
  expected.until = "2026-12-03T10:00:00Z";
  expected.principal = "alice";
  expected.tool = "execute";
  expected.outcome = "policy";
  expected.path = "/orders";
  expected.server = "web-1";
  expected.kind = "request";
  expected.limit = 50;
  expected.format = ReadCommand::Format::table;
  CHECK(std::get<ReadCommand>(command) == expected);
  const CommandLine tail = parse({"audit", "--config", "c.json", "tail"});
  REQUIRE(std::holds_alternative<ReadCommand>(tail));
  CHECK(std::get<ReadCommand>(tail).action == ReadCommand::Action::tail);
  CHECK(std::get<ReadCommand>(tail).format == ReadCommand::Format::json);
  CHECK(std::get<ReadCommand>(parse({"audit", "verify", "--config", "c.json"})).action ==
        ReadCommand::Action::verify);
}

TEST_CASE("audit usage errors say what is wrong in one line", "[server][cli][audit]") {
  CHECK(error_of({"audit"}) == "audit: which action? tail, query or verify");
  CHECK(error_of({"audit", "query"}) ==
        "audit: --config FILE is needed (the config names the store)");
  CHECK(error_of({"audit", "list", "--config", "c"}) ==
        "audit: unknown action 'list' (tail, query or verify)");
  CHECK(error_of({"audit", "tail", "query"}) == "audit: one action only (tail, query or verify)");
  CHECK(error_of({"audit", "tail", "--config"}) == "audit: --config needs a value");
  CHECK(error_of({"audit", "tail", "--color", "x"}) == "audit: unknown argument '--color'");
  CHECK(error_of({"audit", "tail", "--kind", "x"}) == "audit: --kind is call or request");
  CHECK(error_of({"audit", "tail", "--format", "csv"}) == "audit: --format is json or table");
  CHECK(error_of({"audit", "tail", "--limit", "0"}) ==
        "audit: --limit is a number from 1 to 9999999");
  CHECK(error_of({"audit", "tail", "--limit", "-5"}) ==
        "audit: --limit is a number from 1 to 9999999");
  // Only as the first word: elsewhere it is no option.
  CHECK(error_of({"--jitless", "audit"}) == "unknown argument 'audit'");
  CHECK(usage_text().find("audit --config FILE tail|query|verify") != std::string_view::npos);
}

TEST_CASE("stdio serves the API that --api names, or the only one", "[server][cli][apis]") {
  codemode::config::Config config;
  config.apis.resize(1);
  config.apis[0].name = "default";
  const auto index = [&](std::initializer_list<std::string_view> words) {
    auto chosen = stdio_api(serve(words), config);
    if (auto* error = std::get_if<CliError>(&chosen)) return error->message;
    return std::to_string(std::get<std::size_t>(chosen));
  };
  // One API: no --api needed, and --api may name it.
  CHECK(index({"--config", "c.json"}) == "0");
  CHECK(index({"--config", "c.json", "--api", "default"}) == "0");
  config.apis.resize(3);
  config.apis[1].name = "slack";
  config.apis[2].name = "stripe";
  CHECK(index({"--config", "c.json", "--api=stripe"}) == "2");
  CHECK(index({"--config", "c.json", "--http", ":0", "--stdio", "--api", "slack"}) == "1");
  CHECK(index({"--config", "c.json"}) ==
        "the config has several APIs (default, slack, stripe): choose the one stdio serves with "
        "--api NAME");
  CHECK(index({"--config", "c.json", "--api", "github"}) ==
        "--api github: the config has no such API (it has default, slack, stripe)");
  CHECK(error_of({"--api"}) == "--api needs the name of one of the config's APIs");
  CHECK(error_of({"--http", ":0", "--api", "slack"}) ==
        "--api picks the API stdio serves; over HTTP each API is served at /mcp/NAME");
  CHECK(usage_text().find("--api NAME") != std::string_view::npos);
}
