#include "sandbox/engine.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <system_error>

namespace codemode::sandbox {

namespace fs = std::filesystem;

std::string default_engine_dir() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  return (error ? fs::path(".") : self.parent_path()) / "engine";
}

std::vector<std::string> engine_command(const std::string& engine_dir, std::string_view addon,
                                        channel::JitMode jit) {
  std::vector<std::string> command{(fs::path(engine_dir) / "node").string()};
  std::istringstream flags(CODEMODE_ENGINE_FLAGS);
  for (std::string flag; flags >> flag;) command.push_back(flag);
  if (jit == channel::JitMode::jitless) command.emplace_back("--jitless");
  command.emplace_back("-e");
  command.emplace_back(CODEMODE_ENGINE_BOOT);
  command.push_back((fs::path(engine_dir) / addon).string());
  return command;
}

namespace {

std::string time_zone() {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read at start-up, before any thread sets it
  if (const char* zone = std::getenv("TZ"); zone != nullptr && *zone != '\0') return zone;
  // /etc/localtime -> /usr/share/zoneinfo/Europe/Berlin: the zone's name, which ICU resolves
  // from the data built into node.
  std::error_code error;
  const std::string target = fs::read_symlink("/etc/localtime", error).string();
  const std::size_t at = target.find("zoneinfo/");
  if (!error && at != std::string::npos) return target.substr(at + 9);
  return "UTC";
}

}  // namespace

std::vector<std::string> engine_environment() {
  std::vector<std::string> environment{"TZ=" + time_zone()};
  // The sanitizer build's runtime, which node (not built with it) must load before the addon
  // (cmake/NodeEngine.cmake); empty in every other build.
  std::istringstream sanitizer(CODEMODE_SANITIZER_ENVIRONMENT);
  for (std::string variable; sanitizer >> variable;) environment.push_back(variable);
  return environment;
}

std::optional<std::string> engine_problem(const std::string& engine_dir) {
  const fs::path dir(engine_dir);
  for (const fs::path& file : {dir / "node", dir / std::string(kIsolateAddon)}) {
    if (::access(file.c_str(), R_OK) != 0) {
      return "the sandbox engine is missing: " + file.string() + " (" +
             std::error_code(errno, std::generic_category()).message() +
             "); it is built into build/engine beside the binary";
    }
  }
  return std::nullopt;
}

std::string_view engine_node_version() { return CODEMODE_NODE_VERSION; }
std::string_view engine_v8_version() { return CODEMODE_V8_VERSION; }

}  // namespace codemode::sandbox
