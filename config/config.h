// The one configuration file of codemode-mcp, parsed into plain values.
//
// The schema is the documentation: every field below carries its default, and what its absence
// means. Loading never throws for anything the file's author did: every problem found is
// collected into `LoadResult::problems`, one self-contained line each ("upstreams[0].origin:
// ..."), so the user fixes them all in one pass. main() prints them and exits 2.
//
// Values are plain data with no behaviour; the modules that enforce them (sandbox limits,
// gateway policy, HTTP transport) build their own policy objects from them once at start-up.
// Thread-safety: immutable after loading, shared read-only by every thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace codemode::config {

// The inclusive range of an integer setting, declared once beside its field: the loader checks
// it ("limits.cpu_ms: 0 is out of range 1..600000"), and the field's comment need not repeat it.
// Text lengths are declared the same way, as a `k...Chars` constant below the field.
struct Range {
  std::uint32_t min;
  std::uint32_t max;
};

// RFC 8693 token exchange for one upstream: instead of (or beside) static headers, each request
// carries `Authorization: Bearer <token>`, a token the authorization server (http.oauth.issuer)
// issues for this upstream in exchange for the caller's own access token. Needs http.oauth. A
// call that came without an access token (a static token, stdio) cannot be exchanged for: its
// requests to this upstream are refused as a `policy` error, unless its principal's own entry
// for the origin gives headers instead (README.md, "Token exchange").
struct TokenExchange {
  // Sent as `audience` and `resource` (RFC 8693 §2.1); at least one of the two is required.
  // `resource` follows the OAuth URL rule (https, http only on loopback); `audience` is any
  // non-empty text without control characters.
  std::string audience;
  std::string resource;
  // Sent as `scope`, space-separated; scope tokens as in OAuth::tool_scopes. Default: none sent.
  std::vector<std::string> scopes;
  // This server's client at the authorization server, authenticated with HTTP Basic
  // (client_secret_basic). Both required; the secret is never logged.
  std::string client_id;
  std::string client_secret;
  // The token endpoint; absent: the issuer's metadata `token_endpoint`. Same URL rule.
  std::string token_endpoint;
};

// An API the `execute` tool may reach. Absent "upstreams": execute reaches nothing.
struct Upstream {
  // Scheme, host and optional port, nothing else: "https://api.example.com",
  // "http://127.0.0.1:8788". Stored normalised: lower-case scheme and host, no trailing slash,
  // no default port (":80" for http, ":443" for https). No userinfo, path, query or fragment;
  // hosts are ASCII (international names in their xn-- form). Unique among upstreams.
  std::string origin;
  // Injected into every request to this origin, overriding what the code set. Typically
  // credentials, e.g. {"Authorization", "Bearer ${API_TOKEN}"}. Never logged, never shown.
  // In file order. Names are HTTP tokens, unique ignoring case; Host, Content-Length,
  // Transfer-Encoding and Connection are refused (the gateway owns them). Values are non-empty,
  // hold no control character but HTAB, and neither begin nor end with whitespace.
  std::vector<std::pair<std::string, std::string>> headers;
  // "token_exchange": a token exchanged for the caller's access token, injected as
  // Authorization (so `headers` may then not hold an Authorization). Absent: none.
  std::optional<TokenExchange> token_exchange;
  // Query parameters injected into every request to this origin, for APIs keyed by `?api_key=`:
  // a parameter of the same name the code set is removed first, and the value is withheld from
  // the code and from every log line, ledger and audit record like a header's. In file order;
  // names are non-empty, values non-empty and free of control characters.
  std::vector<std::pair<std::string, std::string>> query;
  // Text that is never shown although it is not sent as written: the user and password of
  // "basic" (which becomes an Authorization header in `headers`). Redacted like a header value.
  std::vector<std::string> withheld;
  // Where a relative URL resolves on this upstream, for APIs served under a path ("/api":
  // fetch('/conversations.list') goes to ORIGIN/api/conversations.list). "" is the root. Set only
  // on the first upstream (the one relative URLs go to); nullopt: the path of the API
  // description's first `servers` URL (the daemon decides). Starts with '/', no trailing '/',
  // no query, fragment, dot segment or empty segment.
  std::optional<std::string> base_path;
};

// Per-call bounds. Each has the default shown and its range (inclusive) below it, checked at
// load time: an integer in the JSON (not a float, not a string), inside the range, and cpu_ms <=
// wall_ms. The ranges reject values that are surely typos (0 ms, a 1 TB heap) without
// second-guessing any plausible deployment.
struct Limits {
  std::uint32_t code_chars = 20000;  // longest accepted `code` argument
  static constexpr Range kCodeCharsRange{1, 1000000};
  std::uint32_t result_chars = 12000;  // result JSON text is cut beyond
  static constexpr Range kResultCharsRange{100, 10000000};
  std::uint32_t cpu_ms = 50;  // CPU time on the isolate's thread
  static constexpr Range kCpuMsRange{1, 600000};
  std::uint32_t wall_ms = 10000;  // wall-clock deadline of a call
  static constexpr Range kWallMsRange{10, 3600000};
  std::uint32_t heap_mb = 64;  // V8 heap cap of an isolate
  static constexpr Range kHeapMbRange{8, 4096};
  std::uint32_t subrequests = 10;  // fetch() calls per execute call
  static constexpr Range kSubrequestsRange{0, 10000};
  std::uint32_t response_bytes = 1048576;  // largest upstream body accepted
  static constexpr Range kResponseBytesRange{1, 1073741824};
};

// The principal of the stdio client (server/daemon.cpp), which no token may be named.
inline constexpr std::string_view kStdioPrincipal = "stdio";

// A token the HTTP transport accepts, and the principal it stands for. The name is who the
// caller is: stateful sessions are bound to it, and it is what logs, metrics and audit records
// may show of a caller (unlike the token, it is no secret).
struct BearerToken {
  // 1 to kMaxNameChars characters of [A-Za-z0-9._-], so that it is safe in a log line, a metric
  // label and an audit record without quoting. Unique among all the tokens ignoring ASCII case
  // ("alice" and "Alice" would be one person to a reader of the logs); stored as written. Never
  // "stdio" (any case): kStdioPrincipal.
  std::string name;
  static constexpr std::size_t kMaxNameChars = 64;
  // At least kMinTokenChars visible ASCII characters (short tokens are guessable), no
  // whitespace. Unique among all the tokens: one token stands for one principal. Never logged,
  // never shown.
  std::string token;
  static constexpr std::size_t kMinTokenChars = 16;

  bool operator==(const BearerToken&) const = default;
};

// Opaque access tokens checked by the authorization server (RFC 7662 token introspection): a
// bearer token that is not a JWT (not three dot-separated parts) is POSTed to the introspection
// endpoint, and the answer (`active`, `iss`, `aud`, `exp`, `nbf`, `scope`, `sub`, `client_id`)
// is held to the rules a JWT's claims are. Answers are cached by the token's SHA-256.
struct Introspection {
  // The introspection endpoint; absent: the issuer's metadata `introspection_endpoint`. Same URL
  // rule as OAuth::issuer.
  std::string endpoint;
  // This server's client at the authorization server (client_secret_basic). Both required; the
  // secret is never logged.
  std::string client_id;
  std::string client_secret;
  // Default 300: longest an active answer is reused, in seconds (never past its `exp`): a token
  // revoked at the issuer still works here for up to this long.
  std::uint32_t cache_s = 300;
  static constexpr Range kCacheSRange{1, 3600};
  // Default 10: how long an inactive or refused answer is reused, so a stream of the same
  // made-up token costs one introspection per this many seconds.
  std::uint32_t inactive_cache_s = 10;
  static constexpr Range kInactiveCacheSRange{0, 3600};
  // Default 10000: answers cached at once; beyond, the oldest goes.
  std::uint32_t cache_entries = 10000;
  static constexpr Range kCacheEntriesRange{16, 1000000};
  // Default 8: introspection requests in flight at once; more tokens wait (at most 1,024, then
  // 503).
  std::uint32_t concurrency = 8;
  static constexpr Range kConcurrencyRange{1, 256};
};

// OAuth 2.1 resource server (MCP authorization, 2025-11-25): /mcp also accepts JWT access
// tokens (RFC 9068) issued by one authorization server for this server's resource URL, beside
// the static tokens. Absent: only static tokens (or none) authenticate.
struct OAuth {
  // The authorization server's issuer identifier, exactly as its tokens' `iss` and its metadata's
  // `issuer` write it (a trailing "/" matters: Auth0 writes one). Required. https, or http on a
  // loopback host (127.0.0.1, localhost, [::1]) for development and tests; no query or fragment.
  std::string issuer;
  // This server's canonical resource URL (RFC 8707, RFC 9728): the URL of /mcp as clients reach
  // it, e.g. "https://mcp.example.com/mcp". Required, same URL rule as `issuer`. A token's `aud`
  // must hold it exactly: a token issued for another resource is refused. With several APIs
  // (`apis`), each is its own resource at /mcp/NAME: this URL with "/NAME" appended
  // ("https://mcp.example.com/mcp/github"), and a token must be issued for that one.
  std::string resource;
  // The scopes a tools/call of each tool needs, all of them: {"search": ["mcp:read"],
  // "execute": ["mcp:read", "mcp:execute"]}. Keys: "search", "execute"; values: scope tokens
  // (RFC 6749 §3.3 characters, no space). A tool not listed needs no scope; a token lacking
  // one gets 403 insufficient_scope. Default: none needed. Static tokens are not scoped.
  std::map<std::string, std::vector<std::string>, std::less<>> tool_scopes;
  // The scopes each request an execute call's code makes needs, by its method: "read" for GET
  // and HEAD, "write" for POST, PUT, PATCH and DELETE: {"read": ["api:read"], "write":
  // ["api:write"]}. A request whose caller's access token lacks one is refused as a `policy`
  // error naming it, before it leaves. Default: none needed. Static tokens are not scoped.
  std::vector<std::string> read_scopes;
  std::vector<std::string> write_scopes;
  // "request_scopes": {"spec": true}: a request matching an operation of the API description
  // also needs the OAuth scopes of that operation's `security` (else the document's): one of
  // its alternatives, whole. Default: false.
  bool spec_scopes = false;
  // Also listed in the protected resource metadata's `scopes_supported` (after every scope of
  // `tool_scopes`): scopes a client may ask for that no tool needs. Default: none.
  std::vector<std::string> extra_scopes;
  // How often the issuer's key set (JWKS) is fetched again, in seconds. Default 3600.
  std::uint32_t jwks_refresh_s = 3600;
  static constexpr Range kJwksRefreshSRange{60, 86400};
  // A token naming a kid the key set lacks makes the key set be fetched again at once, at most
  // once per this many seconds (a rotation needs one fetch; made-up kids cost no more than one
  // fetch per interval). Default 10.
  std::uint32_t jwks_min_interval_s = 10;
  static constexpr Range kJwksMinIntervalSRange{0, 3600};
  // Clock skew allowed on `exp` and `nbf`, in seconds. Default 60.
  std::uint32_t leeway_s = 60;
  static constexpr Range kLeewaySRange{0, 300};
  // Which header `typ` a JWT access token may have. false: `at+jwt` (RFC 9068 §4), `JWT` or
  // none, as the issuers in use write them (Keycloak, Entra ID and Auth0's default token profile
  // write `JWT`, Okta and Cognito none); any other `typ` (`logout+jwt`, `dpop+jwt`, ...) is
  // refused. An ID token, typed `JWT` too, still fails on `aud`, which holds the client's id, not
  // `resource`. true: `at+jwt` only, so nothing but an RFC 9068 access token passes, whatever
  // its `aud` (for issuers that type them so: Auth0's "RFC 9068" token profile, oidc-provider).
  // Default: false.
  bool require_typ_at_jwt = false;
  // Opaque tokens by introspection (above). Absent: only JWT access tokens are accepted.
  std::optional<Introspection> introspection;
};

// Whether `url` is one OAuth settings may name: https, or http on a loopback host; an absolute
// URL with an origin net::parse_origin accepts, no query, no fragment. Also applied to the
// issuer's `jwks_uri` once discovered.
bool is_acceptable_oauth_url(std::string_view url);

// The Streamable HTTP transport (used only with --http).
struct Http {
  // Browser Origins allowed to call /mcp (DNS-rebinding defence). Default: http://localhost.
  // Same syntax and normalisation as Upstream::origin; a list in the file replaces the default.
  // A page on this machine's port 80, and the MCP Inspector's (npx @modelcontextprotocol/inspector
  // serves its page on port 6274), which newcomers try first.
  std::vector<std::string> allowed_origins = {"http://localhost", "http://localhost:6274",
                                              "http://127.0.0.1:6274"};
  // Every accepted bearer token with its name: the one list the transport authenticates with.
  // The file may give tokens under two keys, either, both or neither:
  //   "tokens": [{"name": "alice", "token": "${ALICE_TOKEN}"}, ...]   named by the author;
  //   "bearer_tokens": ["${TOKEN}", ...]    named "token-1", "token-2", ... by their 1-based
  //                                         position in that list (a given name may not
  //                                         take one of these).
  // Held in that order: `tokens` in file order, then `bearer_tokens` in file order; the order
  // carries no meaning, every token is compared on every request.
  // Empty: no authentication (allowed on loopback binds only).
  std::vector<BearerToken> bearer_tokens;
  // JWT access tokens from an authorization server, beside the static tokens (OAuth above).
  std::optional<OAuth> oauth;
};

// Which of execute's requests wait for a person's yes (config policy.approve; README.md,
// "Approvals"): a request needs approval when its method is one of `methods` and, if any of
// `operations`, `tags` or `paths` is given, it matches one of them.
struct Approval {
  std::vector<std::string> methods{"POST", "PUT", "PATCH", "DELETE"};  // upper-case
  std::vector<std::string> operations;  // operationIds from the API description
  std::vector<std::string> tags;        // the description's tags
  // Path patterns: `*` matches within one segment, `**` any number of segments
  // ("/orders/*/cancel", "/admin/**").
  std::vector<std::string> paths;
};

// What `execute` may call beyond the origin allowlist. Absent: any path, any method.
struct Policy {
  enum class Operations {
    any,   // every path on an allowed origin
    spec,  // only method + path combinations the OpenAPI document declares (query allowed)
  };
  Operations operations = Operations::any;
  // Upper-case, e.g. {"GET", "HEAD"} for a read-only deployment. Empty: all methods.
  std::vector<std::string> methods;
  std::optional<Approval> approve;  // unset: no request needs approval
  // How long a request waits for the answer before it is refused as unanswered (1 s to 1 h).
  // That wait does not count against limits.wall_ms or cpu_ms.
  std::uint32_t approval_timeout_ms = 120000;
  static constexpr Range kApprovalTimeoutMsRange{1000, 3600000};
  // 64 hex digits (`openssl rand -hex 32`): the AES-256-GCM key that seals the state an MCP
  // 2026-07-28 call's approvals travel in (README.md, "Approvals"); replicas of a fleet share
  // it. Empty: each process makes its own, and a retry must reach the same process.
  std::string approval_key;
};

// How the sandbox runs code, beyond the per-call limits.
struct SandboxSettings {
  // true: V8 runs isolates without its JIT compilers (V8's --jitless): only the bytecode
  // interpreter runs, and no page is ever writable and executable, which removes the JIT's
  // part of V8's attack surface. Costs speed on code that computes (README.md, Security).
  // Absent: false.
  bool jitless = false;
  // Sharing the sandbox between clients (README.md, "Many clients"). A principal is who calls: a
  // bearer token, else an MCP session, else the stdio client. Calls of different principals
  // never share a sandbox process.
  std::uint32_t process_calls = 64;  // calls one sandbox process runs at once
  static constexpr Range kProcessCallsRange{1, 1024};
  // Sandbox processes alive at once, in all. More principals than this calling at once take
  // processes from each other, each change a process start (~40 ms of CPU).
  std::uint32_t max_processes = 128;
  static constexpr Range kMaxProcessesRange{1, 1024};
  std::uint32_t spare_processes = 1;  // started ahead, for a principal's first call
  static constexpr Range kSpareProcessesRange{0, 64};
  std::uint32_t idle_seconds = 60;  // a process with no call this long retires
  static constexpr Range kIdleSecondsRange{1, 86400};
  std::uint32_t principal_calls = 256;  // calls of one principal running at once
  static constexpr Range kPrincipalCallsRange{1, 100000};
  // Calls of one principal waiting beyond principal_calls; one more is refused (HTTP 429 with
  // Retry-After, or a JSON-RPC error on stdio).
  std::uint32_t principal_queue = 256;
  static constexpr Range kPrincipalQueueRange{0, 100000};
  // MiB of the sandbox processes' own resident memory together (shared library
  // pages not counted), shared equally between the principals with a process or a call: while
  // the processes hold more, a principal over its share starts no call (its calls wait, up to
  // their wall_ms) and its idle processes retire; one within its share starts calls as usual.
  // 0: half of the machine's memory.
  std::uint32_t memory_mb = 0;
  static constexpr Range kMemoryMbRange{0, 16777216};
};

// The audit trail (audit/README.md): one record per tools/call and one per gateway request,
// hash-chained per server, written by a writer thread from a bounded queue. Absent "audit": no
// audit trail. Exactly one of "sqlite" and "postgres" names the store.
struct Audit {
  enum class Store {
    sqlite,    // "sqlite": "audit.db": a file, resolved like `openapi`, created when absent (WAL)
    postgres,  // "postgres": "postgresql://user@host/db": libpq connection URI or key=value
               // string; no password in it (a problem): libpq takes it from PGPASSWORD or
               // ~/.pgpass, so the string is safe to show
  };
  enum class OnFailure {
    fail_closed,  // while the store is down, the queue is full or the caller's principal holds its
                  // whole share of it, new tool calls are refused; the records of calls already
                  // accepted are kept until they are written
    drop,         // calls go on; records that find the queue full are dropped and counted
  };
  Store store = Store::sqlite;
  std::filesystem::path sqlite;  // Store::sqlite: absolute, lexically normal; its directory exists
  std::string postgres;          // Store::postgres: as written (expanded), never empty
  // "server": this server's name in the store, and the name of its hash chain: 1 to
  // BearerToken::kMaxNameChars of [A-Za-z0-9._-]. Servers that share a PostgreSQL store need
  // distinct names. Absent: empty, and the daemon uses the host name.
  std::string server;
  // "on_failure": "fail_closed" or "drop". Absent: fail_closed for postgres (a fleet's record
  // of what ran), drop for sqlite (a local log on the server's own disk).
  OnFailure on_failure = OnFailure::drop;
  std::uint32_t queue = 10000;  // records waiting for the writer (see on_failure)
  static constexpr Range kQueueRange{1, 1000000};
  // "queue_per_principal": records one principal may have waiting (at most `queue`), so that one
  // whose code makes records faster than the store takes them fills its own share and not the
  // others' room (drop: its further records are dropped; fail_closed: its new calls are refused
  // until the writer catches up). Absent: 0, which means a tenth of `queue` (at least 1).
  std::uint32_t queue_per_principal = 0;
  static constexpr Range kQueuePerPrincipalRange = kQueueRange;
  std::uint32_t max_age_days = 90;  // older records are deleted; 0: kept forever
  static constexpr Range kMaxAgeDaysRange{0, 36500};
  // Sqlite only (a problem with postgres, whose size is its operator's): the oldest records are
  // deleted while the database holds more than this many MiB; 0: no size bound. Absent: 1024 for
  // sqlite.
  std::uint32_t max_mb = 1024;
  static constexpr Range kMaxMbRange{0, 1048576};
};

// What one principal gets instead of the defaults (config `principals`, keyed by the principal's
// name: a bearer token's `name`), within one API. Anyone not listed gets the API's own headers
// and policy.
struct PrincipalSettings {
  // Headers for some of the API's upstreams, replacing that origin's headers for this
  // principal's requests: typically the principal's own API credential. Same rules as
  // Upstream::headers; each origin must be one of the API's upstreams (the allowlist stays the
  // API's), at most once.
  std::vector<Upstream> upstreams;
  // Replaces the API's policy for this principal; absent: the API's policy.
  std::optional<Policy> policy;
};

// Traces (README.md, "Traces"): spans exported to an OpenTelemetry collector over OTLP/HTTP in
// its JSON encoding. Absent "tracing": no span is exported, and a call that arrives with a W3C
// traceparent still passes its trace on to the upstream requests it makes.
struct Tracing {
  // "otlp": required; the collector's traces URL, http:// or https://
  // ("http://127.0.0.1:4318/v1/traces"). Operator config: the gateway's allowlist does not apply.
  std::string otlp;
  // "service_name": the resource's service.name, 1 to kMaxServiceNameChars printable ASCII.
  // Absent: "codemode-mcp".
  std::string service_name = "codemode-mcp";
  static constexpr std::size_t kMaxServiceNameChars = 128;
  // "headers": sent with every export (a collector's token, say), same rules as an upstream's;
  // never logged. Absent: none.
  std::vector<std::pair<std::string, std::string>> headers;
  // "queue": spans waiting for the exporter thread; a span that finds it full is dropped and
  // counted (codemode_trace_spans_dropped_total). Absent: 2048.
  std::uint32_t queue = 2048;
  static constexpr Range kQueueRange{1, 1000000};
};

// One API the server serves (config `apis.NAME`, or the single-API form's top level): its
// description, where its execute code may go and with which credentials, what it may do there,
// its per-call limits and its principals' own credentials and policy. Each API is served on its
// own (README.md, "Several APIs"): its own tools, gateway, budget, approvals and sandbox
// processes; nothing of one API ever serves another's call.
struct Api {
  // 1 to kMaxNameChars of [a-z0-9_-]: a URL path segment (/mcp/NAME), a metric label and a
  // command-line word (--api NAME) without quoting. The single-API form's API is "default".
  std::string name;
  static constexpr std::size_t kMaxNameChars = 32;
  // The OpenAPI document (JSON or YAML), resolved against the config file's directory. Required
  // in a config file. Empty only for the embedded MarketHub default, whose document is compiled
  // in. Stored absolute and lexically normal; at load time it names a readable regular file.
  std::filesystem::path openapi;
  std::vector<Upstream> upstreams;
  Policy policy;
  Limits limits;
  // By principal: a token's name, or what an OAuth access token names ("sub:SUBJECT",
  // "client:ID"); 1 to Config::kMaxPrincipalChars characters of [A-Za-z0-9._-@:+=|]. Their
  // upstreams are this API's.
  std::map<std::string, PrincipalSettings> principals;
};

// The name of the API of the single-API form (no `apis` key): stable whatever the server's
// `name`, and seen only in logs while it is the only API (/mcp serves it).
inline constexpr std::string_view kDefaultApiName = "default";

struct Config {
  // The APIs served, at least one once loaded (none only from load_audit_section). The
  // single-API form (top-level `openapi`, `upstreams`, `policy`, `limits`, `principals`) gives
  // one, named kDefaultApiName; the `apis` object gives one per key, in file order.
  std::vector<Api> apis;
  // Shared by every API: how the server is reached and who may call (http, with its OAuth
  // issuer), how sandbox processes run (sandbox), where records and spans go (audit, tracing),
  // the trusted CAs (ca_file) and the server's name.
  //
  // PEM file of certificates trusted for HTTPS (upstreams, the OAuth issuer, the trace
  // collector), in addition to the system store (e.g. a private CA). Resolved like `openapi`;
  // absent: the system store only.
  std::optional<std::filesystem::path> ca_file;
  Http http;
  SandboxSettings sandbox;
  std::optional<Audit> audit;
  static constexpr std::size_t kMaxPrincipalChars = 160;
  std::optional<Tracing> tracing;
  // "name": the server's name to its clients (the initialize result's serverInfo.name), so that
  // two instances side by side (one per API) tell apart; 1 to kMaxNameChars of [A-Za-z0-9._-].
  // Absent: "codemode-mcp".
  std::string name = "codemode-mcp";
  static constexpr std::size_t kMaxNameChars = 64;

  // The API named `name`, or null.
  const Api* find_api(std::string_view api_name) const;
};

struct LoadResult {
  std::optional<Config> config;       // set exactly when problems is empty
  std::vector<std::string> problems;  // one line each, no trailing newline, no secrets
};

// Looks an environment variable up; nullopt when it is not set. Injected so tests need no
// process environment.
using Environment = std::function<std::optional<std::string>(std::string_view name)>;
Environment process_environment();

// Parses config text. `base_dir` anchors relative paths. In every string value `${NAME}` is
// replaced by the variable's value, `${NAME:-fallback}` by the value or the fallback when it is
// unset or empty, and `$$` by a single `$`; an unset variable without a fallback is a problem.
// NAME matches [A-Za-z_][A-Za-z0-9_]*; the fallback is literal text up to the first `}`;
// substituted text is not expanded again; a `$` followed by neither `{` nor `$` stays literal.
// Keys are never expanded. Problems name paths and variable names, never an expanded value.
// Unknown keys, duplicate keys and wrong types are problems.
LoadResult parse(std::string_view text, const std::filesystem::path& base_dir,
                 const Environment& env);

// Reads and parses a file; problems are prefixed with nothing (main adds the file name).
LoadResult load_file(const std::filesystem::path& file, const Environment& env);

// Reads only the file's "audit" section, as `codemode-mcp audit` does: the rest of the file and
// the environment variables it names (an upstream's credential, say) are not read, so whoever
// reads the audit trail needs none of them. `config` holds a Config with only `audit` set
// (nullopt there when the file has no such section); problems as in load_file.
LoadResult load_audit_section(const std::filesystem::path& file, const Environment& env);

}  // namespace codemode::config
