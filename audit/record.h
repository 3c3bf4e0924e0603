// What the audit trail records: one CallRecord per tools/call and one RequestRecord per request
// a call's code made through the gateway (or that the gateway refused), as plain values.
//
// A record is stored as its canonical JSON text (`canonical_json`: keys sorted, no whitespace),
// which is what the hash chain covers and what `codemode-mcp audit query` prints. Nothing in a
// record is a credential: the gateway injects credentials after the request a RequestRecord
// describes was checked, and redacts them from what comes back; a record holds the method,
// origin, path and sizes, never a header or a body.
//
// Text in a record is whatever the peer sent (a URL the code wrote, a client's name): any bytes.
// Before a record is stored, its text is made valid UTF-8 (`make_valid_utf8`, the same
// replacement JSON's `replace` makes), and the indexed columns hold `column_text`, so that both
// stores take every record and `verify` finds each as it was written.
//
// Thread-safety: plain values; build one on any thread and hand it to Writer::record.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

namespace codemode::audit {

using Json = nlohmann::json;

struct CallRecord {
  std::string id;                  // 32 hex digits, unique; its RequestRecords name it as call_id
  std::int64_t time_us = 0;        // when the call arrived: microseconds since the Unix epoch (UTC)
  std::string principal;           // the bearer token's name, the HTTP session, or "stdio"
  std::string client_name;         // clientInfo.name from initialize, as sent; empty if none
  std::string client_version;      // clientInfo.version, as sent; empty if none
  std::string session;             // the MCP session id; empty on stdio and stateless HTTP
  std::string transport;           // "stdio" or "http"
  std::string tool;                // "search", "execute", or the unknown name asked for
  std::string code;                // the `code` argument, as received
  std::string code_sha256;         // of `code`'s UTF-8 bytes, 64 lower-case hex digits
  std::string outcome;             // "ok", or the failure kind (channel::ErrorKind's wire name)
  std::string message;             // the failure's one-line fact; empty when ok
  std::uint64_t result_chars = 0;  // characters of the result's JSON text before any cut
  bool result_cut = false;         // the text the client got was cut at limits.result_chars
  std::uint64_t queue_us = 0;      // waiting for a sandbox process
  std::uint64_t run_us = 0;        // from the Run frame read to the Result ready
  std::uint64_t cpu_us = 0;        // CPU time on the isolate's thread; 0 when not measured
  std::string trace_id;            // W3C trace id (32 hex digits); empty when none came
  // The store refused the record as it came; its text is stored escaped (`escaped`). In the
  // JSON only when set, so records written before it existed still verify.
  bool escaped = false;
};

struct RequestRecord {
  std::string id;                // 32 hex digits, unique
  std::string call_id;           // the CallRecord of the execute call whose code made it
  std::int64_t time_us = 0;      // when the gateway got it: microseconds since the Unix epoch
  std::string principal;         // the call's principal, so a query by principal finds its requests
  std::string method;            // "GET", ...
  std::string origin;            // normalised origin, e.g. "https://api.example.com"
  std::string path;              // path and query as sent, e.g. "/v1/items?limit=5"
  std::string operation;         // the OpenAPI operation it matched, "GET /items/{id}"; empty: none
  std::uint32_t status = 0;      // the HTTP status; 0 when refused or failed before one came
  std::uint64_t bytes_sent = 0;  // request body bytes
  std::uint64_t bytes_received = 0;  // response body bytes (after codings were undone)
  std::uint64_t duration_us = 0;
  // Why the gateway refused it or why it failed ("policy: origin not allowed ...",
  // "network: ..."); empty when a response came. A request a person declined, or left
  // unanswered, is refused with the reason ("policy: the user declined it: POST ...").
  std::string refusal;
  // Who approved the request when it waited for a person (policy.approve); empty otherwise. In
  // the record's JSON only when set, so records written before approvals existed still verify.
  std::string approved_by;
  bool escaped = false;  // as CallRecord::escaped
};

using Record = std::variant<CallRecord, RequestRecord>;

// The columns a store indexes besides the JSON text, derived from a record (`column_text` of each
// field); `verify` checks that they still agree with it.
struct Summary {
  std::string id;
  std::int64_t time_us = 0;
  std::string kind;  // "call" or "request"
  std::string principal;
  std::string tool;     // a call's tool; "execute" for a request
  std::string outcome;  // a call's outcome; a request's status ("200") or "refused"
  std::string path;     // a request's path; empty for a call
};

Json to_json(const Record& record);
// keys sorted, no whitespace, invalid UTF-8 replaced: the text the hash chain covers.
std::string canonical_json(const Record& record);
Summary summarize(const Record& record);
// Reads back a record's JSON; nullopt when it is not one (verify reports that row).
std::optional<Record> from_json(const Json& json);
// Summary of stored JSON text without building the Record.
std::optional<Summary> summarize_json(std::string_view text);

const std::string& principal_of(const Record& record);

// `text` with every sequence that is not UTF-8 replaced by U+FFFD, one for each maximal
// invalid subpart (Unicode's recommended practice; nlohmann::json's `replace` does the same, so a
// record made valid first dumps to the same JSON text it did before).
std::string valid_utf8(std::string_view text);
// The longest prefix of `text` of at most `max_bytes` bytes that ends on a character boundary:
// how a record field is cut, so that a cut never makes text that is not UTF-8.
std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes);
// What an indexed column holds for a field: valid_utf8 of it, with a NUL as U+FFFD (PostgreSQL's
// text holds no NUL, and SQLite's text functions stop at one). The JSON keeps the NUL (\u0000).
std::string column_text(std::string_view text);
// Makes every text field of `record` valid UTF-8 (valid_utf8); true when one changed.
bool make_valid_utf8(Record& record);
// Each text field escaped (net::escape_text: controls, invalid bytes and the backslash as
// escapes) and cut to kEscapedFieldBytes of input, and marked `escaped`: what the writer stores
// in place of a record the store refused as input. Ids and numbers are kept.
inline constexpr std::size_t kEscapedFieldBytes = 512;
Record escaped(const Record& record);

// SHA-256 of `bytes`, 64 lower-case hex digits.
std::string sha256_hex(std::string_view bytes);
// 32 random hex digits (128 bits from OpenSSL's RAND_bytes).
std::string new_record_id();
std::int64_t now_us();

// "2026-12-03T10:15:02.123456Z"
std::string format_time(std::int64_t time_us);
// When a bound given on the command line lies: "2026-12-03T10:15:02Z", "2026-12-03T10:15:02.5Z",
// "2026-12-03" (midnight UTC), or an age before `now_us`: "30s", "15m", "2h", "7d".
std::optional<std::int64_t> parse_time(std::string_view text, std::int64_t now_us);

}  // namespace codemode::audit
