// How a request path is read against the paths an API declares: one reading for the operations
// policy, the scopes a request needs and the approval rules (README.md, "Matching a request to an
// operation"), so that none of them can be walked around by a spelling another one accepts.
//
// A request path is read as loosely as common servers route it, so that every spelling an
// upstream may send to a declared operation is matched to that operation here too:
//   - segments are split at '/', and empty ones (a trailing or doubled '/') are skipped;
//   - a segment's ';' parameters are cut (Tomcat, Spring and Jetty route `/orders;x=1` as
//     `/orders`);
//   - the percent escapes URL normalisation leaves (reserved characters) are decoded, as servers
//     decode before they compare a literal (`%3A` is ':'); an escaped '/' does not split;
//   - literal segments compare ignoring ASCII case;
//   - the last segment may carry a format suffix: `/orders.json` is `/orders` (Rails' `.:format`,
//     Spring's suffix patterns).
// Pure functions; any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace codemode::gateway {

// The segments of a request path (no query), read as above: `/Orders;x=1//` -> {"Orders"}.
std::vector<std::string> route_segments(std::string_view path);

// The segments of a declared path template or pattern: split at '/', empty ones skipped.
std::vector<std::string> declared_segments(std::string_view path);

// How a declared segment matches a request segment, from no match to the most specific: a whole
// parameter (`{id}`, any non-empty segment), a segment mixing literal text and one parameter
// (`{name}.json`), a literal followed by a format suffix, a literal. Concrete paths match before
// templated ones (OpenAPI, "Path Templating Matching"): a higher value wins.
enum class SegmentMatch { none, parameter, partial, suffixed, literal };

// `last`: `segment` is the request's last one, where a format suffix may follow a literal.
SegmentMatch match_segment(std::string_view declared, std::string_view segment, bool last);

}  // namespace codemode::gateway
