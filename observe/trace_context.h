// W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` and `tracestate`
// a call arrives with (in `params._meta` of tools/call, or the HTTP headers of the POST that
// carried it), and the `traceparent` the gateway sends upstream for each request of a call.
//
// Everything here is a pure function over text from outside: a malformed value is nullopt (the
// caller starts a new trace, as the specification asks), never an exception, and nothing here
// logs; a caller that mentions a refused value logs its length, never its bytes.
//
// Threading: none; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace codemode::server {

// A parsed `traceparent`: ids as 32 and 16 lower-case hex digits, never all zeros.
struct TraceParent {
  std::string trace_id;
  std::string parent_id;
  bool sampled = false;  // flag bit 0: the caller records this trace
};

// `traceparent` as version 00 defines it ("00-<32 hex>-<16 hex>-<2 hex>"), or a later version
// read by the same rule (its first 55 characters, then nothing or "-..."); version ff, upper-case
// hex, all-zero ids and anything else malformed: nullopt.
std::optional<TraceParent> parse_traceparent(std::string_view text);

// `tracestate` passed on as it came when it is well formed: at most 512 characters, at most 32
// comma-separated list members, each `key=value` of printable ASCII; otherwise empty (dropped,
// as the specification allows: it is only ever forwarded, never read).
std::string valid_tracestate(std::string_view text);

// Whether `name` is a trace context header (`traceparent`, `tracestate`, any case). On an
// execute call's request these are always the host's: the tracer drops any the code set and puts
// the call's own on (tracing.h), so they say nothing about what the code asked for.
bool is_trace_header(std::string_view name);

// "00-<trace_id>-<span_id>-<01 or 00>".
std::string format_traceparent(std::string_view trace_id, std::string_view span_id, bool sampled);

// Random ids (OpenSSL's generator): 32 and 16 lower-case hex digits, never all zeros.
std::string new_trace_id();
std::string new_span_id();

}  // namespace codemode::server
