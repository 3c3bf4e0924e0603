// `codemode-mcp audit --config FILE tail|query|verify`: reading the audit trail from the store
// the config names. server/cli.h parses the command line into a ReadCommand; main() loads the
// config and calls run_read_command.
//
// Output is for people and for scripts: JSON lines (each record's JSON plus "server", "seq"
// and "time") or a table whose peer-written text (paths, messages) is escaped so that it can
// neither forge a row nor drive a terminal.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include "config/config.h"

namespace codemode::audit {

struct ReadCommand {
  enum class Action {
    tail,    // the newest `limit` records (default 10), then new ones as they come
    query,   // records matching the filters, oldest first, at most `limit` (default 1000)
    verify,  // every chain checked; exit 1 at the first break
  };
  enum class Format { json, table };

  Action action = Action::query;
  std::string config_file;
  // Filters: time bounds as audit::parse_time reads them ("2026-12-03T10:00:00Z",
  // "2026-12-03", "15m" ago); the others compare equal, `path` is a prefix of a request's path.
  std::optional<std::string> since;
  std::optional<std::string> until;
  std::optional<std::string> server;
  std::optional<std::string> kind;
  std::optional<std::string> principal;
  std::optional<std::string> tool;
  std::optional<std::string> outcome;
  std::optional<std::string> path;
  std::optional<std::size_t> limit;
  Format format = Format::json;

  bool operator==(const ReadCommand&) const = default;
};

struct FollowOptions {
  std::chrono::milliseconds poll{500};
  // tail goes on while this says so (main: until SIGINT; tests: a few rounds).
  std::function<bool()> keep_following = [] { return true; };
};

// Runs the command against the store `audit` names (opened read-only). Exit status: 0, 1 when
// verify finds a break, 2 when the store cannot be read or a time bound does not parse.
int run_read_command(const ReadCommand& command, const config::Audit& audit, std::ostream& out,
                     std::ostream& err, const FollowOptions& follow = {});

}  // namespace codemode::audit
