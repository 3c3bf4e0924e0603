// The audit section: one store (a SQLite file or a PostgreSQL connection string without a
// password), its bounds, and what happens while it is down.
#include <array>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "config/loader.h"
#include "net/ascii.h"

namespace codemode::config::detail {
namespace {

namespace fs = std::filesystem;

using net::lower;

constexpr std::array<std::string_view, 8> kAuditKeys = {
    "sqlite",       "postgres", "server", "on_failure", "queue", "queue_per_principal",
    "max_age_days", "max_mb"};

// A libpq connection string that carries a password: a URI's userinfo with a ':' or a
// password parameter, in either form.
bool holds_password(std::string_view text) {
  if (lower(text).find("password") != std::string::npos) return true;
  for (std::string_view scheme : {"postgresql://", "postgres://"}) {
    if (!lower(text).starts_with(scheme)) continue;
    std::string_view rest = text.substr(scheme.size());
    rest = rest.substr(0, rest.find_first_of("/?"));
    const std::size_t at = rest.rfind('@');
    return at != std::string_view::npos && rest.substr(0, at).find(':') != std::string_view::npos;
  }
  return false;
}

}  // namespace

// The audit section: one store, its bounds and what happens when it is down.
std::optional<Audit> Loader::load_audit(const Json& value) {
  if (!expect_object(value, "audit")) return std::nullopt;
  Audit audit;
  std::vector<std::string_view> stores;
  std::optional<Audit::OnFailure> on_failure;
  bool saw_max_mb = false;
  for (const auto& [key, field] : value.items()) {
    const std::string path = child_path("audit", key);
    if (key == "sqlite") {
      stores.push_back("sqlite");
      audit.store = Audit::Store::sqlite;
      if (auto file = load_new_file_path(field, path)) audit.sqlite = std::move(*file);
    } else if (key == "postgres") {
      stores.push_back("postgres");
      audit.store = Audit::Store::postgres;
      if (auto text = read_required_string(field, path)) {
        if (holds_password(text->value)) {
          add(path,
              "holds a password; give it in PGPASSWORD or ~/.pgpass instead (libpq reads "
              "them), so the connection string is safe to show");
        } else {
          audit.postgres = std::move(text->value);
        }
      }
    } else if (key == "server") {
      if (auto name = read_token_name(field, path)) audit.server = std::move(*name);
    } else if (key == "on_failure") {
      if (auto text = read_required_string(field, path)) {
        if (text->value == "fail_closed") {
          on_failure = Audit::OnFailure::fail_closed;
        } else if (text->value == "drop") {
          on_failure = Audit::OnFailure::drop;
        } else {
          add(path, "must be \"fail_closed\" or \"drop\"");
        }
      }
    } else if (key == "queue") {
      read_u32(field, path, Audit::kQueueRange, audit.queue);
    } else if (key == "queue_per_principal") {
      read_u32(field, path, Audit::kQueuePerPrincipalRange, audit.queue_per_principal);
    } else if (key == "max_age_days") {
      read_u32(field, path, Audit::kMaxAgeDaysRange, audit.max_age_days);
    } else if (key == "max_mb") {
      saw_max_mb = true;
      read_u32(field, path, Audit::kMaxMbRange, audit.max_mb);
    } else {
      unknown_key("audit", key, kAuditKeys);
    }
  }
  if (stores.empty()) {
    add("audit",
        "names no store: give \"sqlite\": \"audit.db\" or \"postgres\": \"postgresql://...\"");
  } else if (stores.size() > 1) {
    add("audit", "names two stores (sqlite and postgres); give one");
  }
  if (audit.queue_per_principal > audit.queue) {
    add("audit.queue_per_principal",
        "must be at most audit.queue (" + std::to_string(audit.queue) + ")");
  }
  if (audit.store == Audit::Store::postgres) {
    if (saw_max_mb) {
      add("audit.max_mb",
          "applies to sqlite only (the size of a PostgreSQL database is its operator's)");
    }
    audit.max_mb = 0;
  }
  audit.on_failure =
      on_failure.value_or(audit.store == Audit::Store::postgres ? Audit::OnFailure::fail_closed
                                                                : Audit::OnFailure::drop);
  return audit;
}

// A path to a file that may not exist yet, resolved against the config file's directory; its
// directory must exist.
std::optional<fs::path> Loader::load_new_file_path(const Json& value, std::string_view path) {
  const std::optional<Expanded> text = read_required_string(value, path);
  if (!text) return std::nullopt;
  std::error_code error;
  fs::path file = fs::absolute(base_dir_ / fs::path(text->value), error).lexically_normal();
  const std::string shown = text->from_environment ? "the file" : printable(file.string());
  if (error || !fs::is_directory(file.parent_path(), error)) {
    add(path, "the directory of " + shown + " does not exist");
    return std::nullopt;
  }
  if (fs::is_directory(file, error)) {
    add(path, shown + " is a directory");
    return std::nullopt;
  }
  return file;
}

}  // namespace codemode::config::detail
