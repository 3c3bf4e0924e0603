#include "gateway/redaction.h"

#include <algorithm>
#include <utility>

#include "net/ascii.h"
#include "net/percent.h"

namespace codemode::gateway {
namespace {

// [begin, end) in the text being redacted.
using Spans = std::vector<std::pair<std::size_t, std::size_t>>;

// Appends where each secret occurs in `text`, mapped through `from` when `text` is decoded.
void find_secrets(std::string_view text, Spans& spans, const std::vector<std::size_t>* from,
                  const std::vector<std::string_view>& secrets) {
  for (const std::string_view secret : secrets) {
    if (secret.empty()) continue;
    for (auto at = text.find(secret); at != std::string_view::npos;
         at = text.find(secret, at + 1)) {
      const std::size_t end = at + secret.size();
      spans.emplace_back(from ? (*from)[at] : at, from ? (*from)[end] : end);
    }
  }
}

bool contains_any(std::string_view text, const std::vector<std::string_view>& secrets) {
  return std::any_of(secrets.begin(), secrets.end(), [&](std::string_view secret) {
    return !secret.empty() && text.find(secret) != std::string_view::npos;
  });
}

// JSON's escapes of ASCII at the front of `text`, appended decoded: \/ \" \\ and \u00XX (PHP
// writes '/' as \/, .NET '+' as \u002B, some encoders every byte as \u00XX). The bytes
// consumed; 0 when there is none.
std::size_t json_escape(std::string_view text, std::string& decoded) {
  if (text.size() < 2 || text[0] != '\\') return 0;
  if (text[1] == '/' || text[1] == '"' || text[1] == '\\') {
    decoded += text[1];
    return 2;
  }
  if (text[1] != 'u' || text.size() < 6) return 0;
  int value = 0;
  for (std::size_t k = 2; k < 6; ++k) {
    const int digit = net::hex_value(text[k]);
    if (digit < 0) return 0;
    value = value * 16 + digit;
  }
  if (value >= 0x80) return 0;
  decoded += static_cast<char>(value);
  return 6;
}

// `text` with %XX and JSON's ASCII escapes decoded into `decoded`; with `from`, where each
// decoded byte came from: decoded[i] from text[from[i], from[i + 1]).
void decode_escapes(std::string_view text, std::string& decoded, std::vector<std::size_t>* from) {
  decoded.clear();
  decoded.reserve(text.size());
  if (from) from->reserve(text.size() + 1);
  for (std::size_t i = 0; i < text.size();) {
    if (from) from->push_back(i);
    const int high = text[i] == '%' && i + 2 < text.size() ? net::hex_value(text[i + 1]) : -1;
    const int low = high >= 0 ? net::hex_value(text[i + 2]) : -1;
    if (low >= 0) {
      decoded += static_cast<char>(high * 16 + low);
      i += 3;
    } else if (const std::size_t length = json_escape(text.substr(i), decoded); length > 0) {
      i += length;
    } else {
      decoded += text[i];
      i += 1;
    }
  }
  if (from) from->push_back(text.size());
}

// Replaces every occurrence of a secret in `text`, matched both as written and with escapes
// decoded; an occurrence that spans escapes is replaced with the escapes it spans.
void redact_text(std::string& text, std::string_view replacement,
                 const std::vector<std::string_view>& secrets) {
  Spans spans;
  find_secrets(text, spans, nullptr, secrets);
  if (text.find_first_of("%\\") != std::string::npos) {
    std::string decoded;
    std::vector<std::size_t> from;
    decode_escapes(text, decoded, nullptr);
    if (contains_any(decoded, secrets)) {
      decode_escapes(text, decoded, &from);
      find_secrets(decoded, spans, &from, secrets);
    }
  }
  if (spans.empty()) return;
  std::sort(spans.begin(), spans.end());
  std::string out;
  std::size_t done = 0;
  for (std::size_t i = 0; i < spans.size();) {
    auto [begin, end] = spans[i];
    for (++i; i < spans.size() && spans[i].first < end; ++i) end = std::max(end, spans[i].second);
    out.append(text, done, begin - done);
    out += replacement;
    done = end;
  }
  out.append(text, done, std::string::npos);
  text = std::move(out);
}

}  // namespace

std::vector<std::string> secrets_of(const std::vector<config::Upstream>& upstreams) {
  std::vector<std::string> secrets;
  for (const auto& upstream : upstreams) {
    for (const auto& [name, value] : upstream.query) {
      secrets.push_back(value);
      // As the gateway appends it to the target (request_check.cpp, query_encode).
      if (std::string encoded = net::percent_encode(value, net::kUnreserved); encoded != value) {
        secrets.push_back(std::move(encoded));
      }
    }
    for (const auto& text : upstream.withheld) secrets.push_back(text);
    for (const auto& [name, value] : upstream.headers) {
      secrets.push_back(value);
      std::size_t start = 0;
      while (start < value.size()) {
        std::size_t end = value.find_first_of(" \t", start);
        if (end == std::string::npos) end = value.size();
        if (end - start >= kMinSecretFragment && end - start != value.size()) {
          secrets.push_back(value.substr(start, end - start));
        }
        start = end + 1;
      }
    }
  }
  return secrets;
}

void redact(InboundResponse& response, Method method, const std::vector<std::string>& configured,
            std::string_view exchanged) {
  std::vector<std::string_view> secrets(configured.begin(), configured.end());
  if (!exchanged.empty()) secrets.push_back(exchanged);
  if (!secrets.empty()) {
    redact_text(response.body, "[redacted]", secrets);
    redact_text(response.status_text, "[redacted]", secrets);
    redact_text(response.final_url, "[redacted]", secrets);
    for (auto& [name, value] : response.headers) {
      redact_text(name, "redacted", secrets);  // still a token, as names must be
      redact_text(value, "[redacted]", secrets);
    }
  }
  const bool bodyless = method == Method::head || response.status == 204 || response.status == 304;
  if (!bodyless) {
    response.headers.emplace_back("Content-Length", std::to_string(response.body.size()));
  }
}

std::string scrub(std::string text, const std::vector<std::string>& configured) {
  if (contains_any(text, configured)) return "(withheld: it would show a configured credential)";
  return text;
}

}  // namespace codemode::gateway
