// What neither the code nor our own text may show of a credential: the secrets a gateway's
// upstreams configure, every form in which they can show up, and their removal from a response
// and from our messages. Pure functions over text; the gateway calls them (gateway.cpp).
//
// Ownership: the gateway's state builds its secrets once (secrets_of) and owns them for its
// lifetime; every function here borrows them for the length of one call and keeps nothing, as
// it borrows an exchanged token from the request that carried it. Thread-safe: no state.
//
// Order does not matter anywhere here: every occurrence of every secret is found, and
// occurrences that overlap are replaced as one.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "gateway/request.h"
#include "gateway/request_check.h"

namespace codemode::gateway {

// A word of a configured header value is withheld on its own (the token of `Bearer <token>`)
// when it is at least this long; shorter words are too common to withhold text for.
inline constexpr std::size_t kMinSecretFragment = 8;

// Everything a configured credential could show up as in text: each header value whole and each
// word of it (split at spaces and tabs) of kMinSecretFragment bytes or more; each query value as
// configured and as the gateway sends it (percent-encoded but for RFC 3986's unreserved
// characters); each `withheld` text (a Basic credential's user:password and password).
std::vector<std::string> secrets_of(const std::vector<config::Upstream>& upstreams);

// Readies `response` for the code: every secret in `configured`, and `exchanged` (a token the
// request carried in exchange for the caller's; empty: none), is replaced in the body (after
// content decoding), the reason phrase, the final URL and each header value by `[redacted]`,
// and in each header name by `redacted` (still a token, as names must be); matched as written,
// with %XX escapes decoded, and with JSON's ASCII escapes decoded (\/ \" \\ \u00XX). An
// occurrence that spans escapes is replaced with the escapes it spans. Other transformations
// (base64, hashes) are not recognised: an upstream that transforms a credential defeats this.
//
// Then a Content-Length of the body as it now is is appended, so it tells nothing about what was
// replaced; none for a HEAD request (`method`), a 204 or a 304, which have no body.
void redact(InboundResponse& response, Method method, const std::vector<std::string>& configured,
            std::string_view exchanged = {});

// Our own text (an error message, a log line) as it may be shown: `text` itself, or, when it
// holds any of `configured` as written, a fixed notice instead. The code or the upstream may
// have put a credential into a URL or a message we repeat.
std::string scrub(std::string text, const std::vector<std::string>& configured);

}  // namespace codemode::gateway
