#include "audit/cli.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <thread>

#include "audit/store.h"
#include "net/escape.h"

namespace codemode::audit {

namespace {

// Characters valid in JSON text and passed by net::escape_text that a terminal obeys or that
// change what a person reads: DEL, the C1 controls U+0080..U+009F (8-bit CSI and friends), the
// bidirectional controls (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069) and the line
// and paragraph separators (U+2028, U+2029).
bool obeyed(char32_t c) {
  return c == 0x7f || (c >= 0x80 && c <= 0x9f) || c == 0x61c || c == 0x200e || c == 0x200f ||
         (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c == 0x2028 || c == 0x2029;
}

// `utf8` (valid UTF-8: a JSON text this process dumped, or net::escape_text's output) with each
// `obeyed` character written as a \uXXXX escape: in a JSON line that is the same JSON, and in
// a table cell, where escape_text already wrote any backslash as \\, it cannot be forged.
std::string escape_obeyed(std::string_view utf8) {
  std::string out;
  out.reserve(utf8.size());
  for (std::size_t i = 0; i < utf8.size();) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(utf8[i + k]); };
    std::size_t size = 1;
    char32_t c = byte(0);
    if (byte(0) >= 0xc0 && byte(0) < 0xe0 && i + 1 < utf8.size()) {
      size = 2;
      c = ((byte(0) & 0x1fU) << 6) | (byte(1) & 0x3fU);
    } else if (byte(0) >= 0xe0 && byte(0) < 0xf0 && i + 2 < utf8.size()) {
      size = 3;
      c = ((byte(0) & 0x0fU) << 12) | ((byte(1) & 0x3fU) << 6) | (byte(2) & 0x3fU);
    } else if (byte(0) >= 0xf0) {
      size = std::min<std::size_t>(4, utf8.size() - i);
    }
    if (obeyed(c)) {
      char escape[8];
      (void)std::snprintf(escape, sizeof escape, "\\u%04x",  // fits: 6 of 8 bytes
                          static_cast<unsigned>(c));
      out += escape;
    } else {
      out.append(utf8.substr(i, size));
    }
    i += size;
  }
  return out;
}

// Text from the store for a terminal: escaped as the server's log escapes it, and `obeyed`
// characters too; whole (verify's lines) when `width` is 0, else cut to `width` bytes on a
// character boundary.
std::string cell(std::string_view text, std::size_t width) {
  std::string out = escape_obeyed(net::escape_text(text, width > 0 ? width : text.size()));
  if (width > 0 && out.size() > width) out = std::string(utf8_prefix(out, width - 1)) + "~";
  return out;
}

// What verify says of one removal by retention.
std::string removed(const Removal& removal) {
  const std::string records =
      "records " + std::to_string(removal.first_seq) + ".." + std::to_string(removal.last_seq);
  if (removal.reason == "unrecorded") {
    return records + " removed by retention before this store recorded removals";
  }
  return records + " removed by retention (" + cell(removal.reason, 0) + ") at " +
         format_time(removal.removed_us) + ", written " + format_time(removal.oldest_us) + " to " +
         format_time(removal.newest_us);
}

std::string pad(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

std::string milliseconds(std::uint64_t us) {
  char buffer[32];
  (void)std::snprintf(buffer, sizeof buffer, "%.1f",  // fits: at most 22 of 32 bytes
                      static_cast<double>(us) / 1000.0);
  return buffer;
}

void print_header(std::ostream& out) {
  out << pad("TIME", 24) << " " << pad("SERVER#SEQ", 16) << " " << pad("PRINCIPAL", 12) << " "
      << pad("KIND", 7) << " " << pad("OUTCOME", 9) << " " << pad("MS", 8) << " WHAT\n";
}

void print(const StoredRecord& record, ReadCommand::Format format, std::ostream& out) {
  Json json = Json::parse(record.json, nullptr, false);
  if (json.is_discarded()) json = Json::object();
  if (format == ReadCommand::Format::json) {
    json["server"] = record.server;
    json["seq"] = record.seq;
    json["time"] = format_time(record.summary.time_us);
    out << escape_obeyed(json.dump(-1, ' ', false, Json::error_handler_t::replace)) << "\n";
    return;
  }
  const Summary& s = record.summary;
  std::string what;
  std::uint64_t us = 0;
  if (s.kind == "call") {
    what = json.value("tool", "") + " code " + json.value("code_sha256", "").substr(0, 12);
    if (!json.value("message", "").empty()) what += ": " + json.value("message", "");
    us = json.value("queue_us", std::uint64_t{0}) + json.value("run_us", std::uint64_t{0});
  } else {
    what = json.value("method", "") + " " + json.value("origin", "") + json.value("path", "");
    if (!json.value("refusal", "").empty()) what += ": " + json.value("refusal", "");
    us = json.value("duration_us", std::uint64_t{0});
  }
  out << format_time(s.time_us).substr(0, 23) << "Z "
      << pad(cell(record.server, 10) + "#" + std::to_string(record.seq), 16) << " "
      << pad(cell(s.principal, 12), 12) << " " << pad(s.kind, 7) << " "
      << pad(cell(s.outcome, 9), 9) << " " << pad(milliseconds(us), 8) << " " << cell(what, 160)
      << "\n";
}

// The command's filters as a store query; nullopt when --since or --until is not a time (said
// on `err`).
std::optional<Query> query_of(const ReadCommand& command, std::ostream& err) {
  Query query;
  const std::int64_t now = now_us();
  for (const auto& [text, bound] :
       {std::pair{&command.since, &query.since_us}, std::pair{&command.until, &query.until_us}}) {
    if (!*text) continue;
    *bound = parse_time(**text, now);
    if (!*bound) {
      err << "codemode-mcp audit: '" << cell(**text, 40)
          << "' is not a time (2026-12-03T10:00:00Z, 2026-12-03, or an age: 30s, 15m, 2h, 7d)\n";
      return std::nullopt;
    }
  }
  query.server = command.server;
  query.kind = command.kind;
  query.principal = command.principal;
  query.tool = command.tool;
  query.outcome = command.outcome;
  query.path_prefix = command.path;
  return query;
}

// `audit verify`: each chain's extent and head, the removals by retention, and any break.
int run_verify(Store& store, const ReadCommand& command, std::ostream& out) {
  // Everything here came from the store, which someone with write access to it may have
  // filled with text meant for the operator's terminal: escaped, each line.
  const VerifyReport report = verify(store, command.server);
  for (const ChainHead& head : report.chains) {
    out << "server " << cell(head.server, 0) << ": records " << head.first_seq << ".."
        << head.last_seq << ", head " << cell(head.last_hash, 0) << "\n";
    for (const Removal& removal : report.removals) {
      if (removal.server == head.server) {
        out << "server " << cell(head.server, 0) << ": " << removed(removal) << "\n";
      }
    }
  }
  if (!report.intact()) {
    for (const std::string& line : report.breaks) out << "BROKEN: " << cell(line, 0) << "\n";
    if (report.break_count > report.breaks.size()) {
      out << "BROKEN: and " << report.break_count - report.breaks.size() << " more\n";
    }
    return 1;
  }
  out << "intact: " << report.records << " records in " << report.chains.size()
      << (report.chains.size() == 1 ? " chain\n" : " chains\n");
  return 0;
}

// `audit query`: the matching records, oldest first, up to --limit (1000).
int run_query(Store& store, Query query, const ReadCommand& command, std::ostream& out,
              std::ostream& err) {
  query.limit = command.limit.value_or(1000);
  auto rows = store.query(query);
  if (auto* error = std::get_if<std::string>(&rows)) {
    err << "codemode-mcp audit: " << *error << "\n";
    return 2;
  }
  for (const StoredRecord& r : std::get<std::vector<StoredRecord>>(rows)) {
    print(r, command.format, out);
  }
  return 0;
}

// `audit tail`: where each chain ends now, the newest records up to there, then what follows
// while `follow` says to go on.
int run_tail(Store& store, const Query& query, const ReadCommand& command, std::ostream& out,
             std::ostream& err, const FollowOptions& follow) {
  std::map<std::string, std::uint64_t> cursor;
  auto heads = store.heads();
  if (auto* error = std::get_if<std::string>(&heads)) {
    err << "codemode-mcp audit: " << *error << "\n";
    return 2;
  }
  for (const ChainHead& head : std::get<std::vector<ChainHead>>(heads)) {
    cursor[head.server] = head.last_seq;
  }
  Query newest = query;
  newest.order = Query::Order::newest_first;
  newest.limit = command.limit.value_or(10);
  auto rows = store.query(newest);
  if (auto* error = std::get_if<std::string>(&rows)) {
    err << "codemode-mcp audit: " << *error << "\n";
    return 2;
  }
  auto& recent = std::get<std::vector<StoredRecord>>(rows);
  std::reverse(recent.begin(), recent.end());
  for (const StoredRecord& r : recent) {
    if (r.seq <= cursor[r.server]) print(r, command.format, out);
  }
  out.flush();
  while (follow.keep_following()) {
    std::this_thread::sleep_for(follow.poll);
    heads = store.heads();
    if (auto* error = std::get_if<std::string>(&heads)) {
      err << "codemode-mcp audit: " << *error << "\n";
      continue;  // a store that restarts: go on following
    }
    for (const ChainHead& head : std::get<std::vector<ChainHead>>(heads)) {
      std::uint64_t& at = cursor[head.server];
      at = std::max(at, head.first_seq - 1);
      while (at < head.last_seq) {
        auto page = store.chain(head.server, at, 1000);
        if (!std::holds_alternative<std::vector<StoredRecord>>(page)) break;
        const auto& records = std::get<std::vector<StoredRecord>>(page);
        if (records.empty()) break;
        for (const StoredRecord& r : records) {
          if (matches(query, r)) print(r, command.format, out);
          at = r.seq;
        }
      }
    }
    out.flush();
  }
  return 0;
}

}  // namespace

int run_read_command(const ReadCommand& command, const config::Audit& audit, std::ostream& out,
                     std::ostream& err, const FollowOptions& follow) {
  const std::optional<Query> query = query_of(command, err);
  if (!query) return 2;
  auto opened = open_store(audit, OpenMode::read);
  if (auto* problem = std::get_if<std::string>(&opened)) {
    err << "codemode-mcp audit: " << *problem << "\n";
    return 2;
  }
  Store& store = *std::get<std::unique_ptr<Store>>(opened);
  if (command.action == ReadCommand::Action::verify) return run_verify(store, command, out);
  if (command.format == ReadCommand::Format::table) print_header(out);
  if (command.action == ReadCommand::Action::query) {
    return run_query(store, *query, command, out, err);
  }
  return run_tail(store, *query, command, out, err, follow);
}

}  // namespace codemode::audit
