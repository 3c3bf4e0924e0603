// The config file's entry points (config/config.h): reading the file (at most 16 MiB, a relative
// path shown with the directory it was taken from), its JSON (config/json_reader.h), and handing
// the document to the schema walk (config/loader.h), whose problems come back as values.
#include "config/config.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <system_error>
#include <variant>

#include <nlohmann/json.hpp>

#include "config/json_reader.h"
#include "config/loader.h"
#include "config/problem_path.h"
#include "net/origin.h"

namespace codemode::config {
namespace {

namespace fs = std::filesystem;

using detail::Json;
using detail::Loader;
using detail::type_phrase;

constexpr std::size_t kMaxFileBytes = std::size_t{16} * 1024 * 1024;

}  // namespace

Environment process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): nothing in the daemon changes its environment
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

namespace {

enum class Sections { all, audit_only };

LoadResult parse_sections(std::string_view text, const std::filesystem::path& base_dir,
                          const Environment& env, Sections sections) {
  LoadResult result;
  try {
    // On a syntax error the reader has reported it; nothing else is worth saying.
    const std::optional<Json> document = detail::read_json(text, result.problems);
    if (!document) return result;
    const Json& root = *document;
    if (!root.is_object()) {
      result.problems.push_back("expected a JSON object at the top level, got " +
                                std::string(type_phrase(root)));
      return result;
    }
    Loader loader(base_dir, env, result.problems);
    Config config = sections == Sections::all ? loader.load(root) : loader.load_audit_only(root);
    if (result.problems.empty()) result.config = std::move(config);
  } catch (const nlohmann::json::exception& error) {
    // Every access above is type-checked first; reaching this is a bug, reported as a problem
    // rather than thrown so that a start-up never dies on a config file.
    result.config.reset();
    result.problems.push_back("internal error while reading the configuration (json error " +
                              std::to_string(error.id) + ")");
  }
  return result;
}

}  // namespace

LoadResult parse(std::string_view text, const std::filesystem::path& base_dir,
                 const Environment& env) {
  return parse_sections(text, base_dir, env, Sections::all);
}

namespace {

LoadResult load_sections(const std::filesystem::path& file, const Environment& env,
                         Sections sections) {
  std::error_code error;
  const fs::path absolute = fs::absolute(file, error);
  // A relative path is shown with where it was taken from: a client that starts the server
  // usually says nothing of its working directory (Claude Desktop's is /).
  const auto cannot_read = [&](const std::string& why) {
    LoadResult result;
    std::string shown = file.string();
    if (file.is_relative() && !error) {
      shown = absolute.lexically_normal().string() + " (" + file.string() +
              " from the working directory " + fs::current_path(error).string() + ")";
    }
    result.problems.push_back("cannot read " + shown + ": " + why);
    return result;
  };
  if (error) return cannot_read(error.message());

  std::unique_ptr<std::FILE, int (*)(std::FILE*)> stream(std::fopen(absolute.c_str(), "rb"),
                                                         &std::fclose);
  if (!stream) return cannot_read(std::error_code(errno, std::generic_category()).message());
  std::string text;
  std::array<char, 65536> buffer{};
  while (true) {
    const std::size_t count = std::fread(buffer.data(), 1, buffer.size(), stream.get());
    text.append(buffer.data(), count);
    if (text.size() > kMaxFileBytes) {
      return cannot_read("larger than " +
                         std::to_string(kMaxFileBytes / (std::size_t{1024} * 1024)) +
                         " MiB, which no config file is");
    }
    if (count < buffer.size()) break;
  }
  if (std::ferror(stream.get())) {
    return cannot_read(std::error_code(errno, std::generic_category()).message());
  }
  return parse_sections(text, absolute.parent_path(), env, sections);
}

}  // namespace

LoadResult load_file(const std::filesystem::path& file, const Environment& env) {
  return load_sections(file, env, Sections::all);
}

LoadResult load_audit_section(const std::filesystem::path& file, const Environment& env) {
  return load_sections(file, env, Sections::audit_only);
}

bool is_acceptable_oauth_url(std::string_view url) {
  const std::size_t separator = url.find("://");
  if (separator == std::string_view::npos) return false;
  const std::size_t path_start = url.find('/', separator + 3);
  const std::string_view origin = url.substr(0, path_start);
  if (url.find_first_of("?#") != std::string_view::npos) return false;
  const auto parsed = net::parse_origin(origin, net::OriginForm::header);
  const auto* ok = std::get_if<net::Origin>(&parsed);
  if (!ok) return false;
  if (ok->scheme == net::Scheme::https) return true;
  return ok->host == "127.0.0.1" || ok->host == "localhost" || ok->host == "[::1]";
}

const Api* Config::find_api(std::string_view api_name) const {
  const auto it =
      std::find_if(apis.begin(), apis.end(), [&](const Api& api) { return api.name == api_name; });
  return it == apis.end() ? nullptr : &*it;
}

}  // namespace codemode::config
