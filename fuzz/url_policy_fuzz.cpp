// Fuzzes the gateway's checks on what `execute` code controls: the URL (normalise_url and the
// origin allowlist), the headers (check_headers, inject_credentials) and the spec-aware
// operation policy. An input is lines: a base URL (also the first allowed upstream), a URL,
// then any number of "Name: value" headers and "/path/{template}" operations.
//
// Invariants: nothing throws; a normalised URL is consistent with itself (origin, Host header,
// port) and normalises to itself; its host and request target hold no byte that could end or
// split a request line; an allowed URL's origin is the allowed upstream's; refusals are one
// line; checked headers are valid, within the limits and free of gateway-owned names, and the
// upstream's credentials are sent exactly once, last.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "fuzz/check.h"
#include "gateway/operation_policy.h"
#include "gateway/request_check.h"
#include "gateway/url_policy.h"

namespace {

using namespace codemode;
using namespace codemode::gateway;

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (true) {
    const std::size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) return lines;
    text.remove_prefix(end + 1);
  }
}

bool fits_request_line(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte > 0x20 && byte < 0x7F;
  });
}

bool one_line(std::string_view text) {
  return text.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

void check_normalised(const NormalisedUrl& url) {
  const std::uint16_t default_port = url.scheme == Scheme::http ? 80 : 443;
  const std::string authority =
      url.host + (url.port == default_port ? "" : ":" + std::to_string(url.port));
  FUZZ_CHECK(url.origin == std::string(to_string(url.scheme)) + "://" + authority,
             "the origin is scheme://host[:port], the default port omitted");
  FUZZ_CHECK(url.host_header() == authority, "the Host header is the origin's authority");
  FUZZ_CHECK(!url.host.empty() && fits_request_line(url.host), "the host is printable ASCII");
  FUZZ_CHECK(url.host.find_first_of("/?#@\\") == std::string::npos, "the host is only a host");
  FUZZ_CHECK(!url.target.empty() && url.target.front() == '/', "the target is origin-form");
  FUZZ_CHECK(fits_request_line(url.target), "the target cannot split the request line");
  FUZZ_CHECK(url.target.find('#') == std::string::npos, "no fragment is sent");

  const UrlResult again = normalise_url(url.full(), "");
  const auto* same = std::get_if<NormalisedUrl>(&again);
  if (same == nullptr)
    (void)std::fprintf(stderr, "refused: %s\n", std::get<std::string>(again).c_str());
  FUZZ_CHECK(same != nullptr, "a normalised URL normalises");
  if (same->full() != url.full()) {
    (void)std::fprintf(stderr, "first:  %s\nsecond: %s\n", url.full().c_str(),
                       same->full().c_str());
  }
  FUZZ_CHECK(same->full() == url.full() && same->port == url.port && same->scheme == url.scheme &&
                 same->host == url.host,
             "a normalised URL normalises to itself");
}

void check_url(std::string_view base, std::string_view input) {
  const UrlResult result = normalise_url(input, base);
  if (const auto* url = std::get_if<NormalisedUrl>(&result)) {
    check_normalised(*url);
  } else {
    FUZZ_CHECK(one_line(std::get<std::string>(result)), "a refusal is one line");
  }

  config::Upstream first;
  first.origin = std::string(base);
  config::Upstream second;
  second.origin = "http://127.0.0.1:8788";
  const UrlPolicy policy({first, second});
  FUZZ_CHECK(policy.origins().size() == 2, "origins are index-aligned with the upstreams");
  FUZZ_CHECK(static_cast<std::size_t>(std::count(policy.origins().begin(), policy.origins().end(),
                                                 "")) == policy.problems().size(),
             "an upstream is left out exactly when it is reported");
  const PolicyDecision decision = policy.decide(input);
  if (const auto* allowed = std::get_if<Allowed>(&decision)) {
    FUZZ_CHECK(allowed->upstream < policy.origins().size(), "an allowed URL names an upstream");
    FUZZ_CHECK(allowed->url.origin == policy.origins()[allowed->upstream],
               "an allowed URL is on the upstream's origin");
    check_normalised(allowed->url);
  } else {
    FUZZ_CHECK(one_line(std::get<Refused>(decision).message), "a refusal is one line");
  }
}

void check_request_headers(const Headers& headers) {
  const auto checked = check_headers(headers);
  if (const auto* error = std::get_if<GatewayError>(&checked)) {
    FUZZ_CHECK(error->kind == ErrorKind::policy, "bad headers are the code's doing");
    FUZZ_CHECK(one_line(error->message), "a refusal is one line");
    return;
  }
  const auto& ok = std::get<CheckedHeaders>(checked);
  FUZZ_CHECK(ok.headers.size() <= kMaxRequestHeaders, "at most kMaxRequestHeaders");
  for (const auto& [name, value] : ok.headers) {
    FUZZ_CHECK(is_header_name(name) && is_header_value(value), "what is sent is valid HTTP");
    FUZZ_CHECK(!is_gateway_owned_header(name), "the gateway's own headers are dropped");
    FUZZ_CHECK(value.empty() || (value.front() != ' ' && value.front() != '\t' &&
                                 value.back() != ' ' && value.back() != '\t'),
               "values are trimmed");
  }
  config::Upstream upstream;
  upstream.origin = "http://127.0.0.1:8788";
  upstream.headers = {{"Authorization", "Bearer upstream"}};
  const Headers sent = inject_credentials(ok.headers, upstream);
  const auto credentials = std::count_if(sent.begin(), sent.end(), [](const Header& header) {
    return equal_ignoring_case(header.first, "authorization");
  });
  FUZZ_CHECK(credentials == 1 && sent.back().second == "Bearer upstream",
             "the upstream's credentials are sent once, last");
}

void check_operations(const std::vector<Operation>& operations, std::string_view url) {
  const UrlResult result = normalise_url(url, "http://api.test/");
  const auto* normalised = std::get_if<NormalisedUrl>(&result);
  if (normalised == nullptr) return;
  const OperationPolicy open;
  const OperationPolicy declared(OperationPolicyOptions{operations, {"/v1"}, {}});
  const OperationPolicy read_only(
      OperationPolicyOptions{std::nullopt, {}, {Method::get, Method::head}});
  for (const Method method :
       {Method::get, Method::post, Method::put, Method::patch, Method::del, Method::head}) {
    FUZZ_CHECK(!open.check(method, normalised->target), "the default policy allows everything");
    if (const auto refusal = declared.check(method, normalised->target)) {
      FUZZ_CHECK(one_line(*refusal), "a refusal is one line");
    }
    const bool reads = method == Method::get || method == Method::head;
    FUZZ_CHECK(read_only.check(method, normalised->target).has_value() != reads,
               "a method-only policy decides by method alone");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::string_view> lines =
      split_lines(std::string_view(reinterpret_cast<const char*>(data), size));
  const std::string_view base = lines[0];
  const std::string_view url = lines.size() > 1 ? lines[1] : std::string_view();
  check_url(base, url);

  Headers headers;
  std::vector<Operation> operations;
  for (std::size_t i = 2; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    if (!line.empty() && line.front() == '/') {
      Operation operation;
      operation.method = static_cast<Method>(i % 6);
      operation.path_template = std::string(line);
      operations.push_back(std::move(operation));
    } else {
      const std::size_t colon = line.find(':');
      headers.emplace_back(line.substr(0, colon),
                           colon == std::string_view::npos ? "" : line.substr(colon + 1));
    }
  }
  check_request_headers(headers);
  check_operations(operations, url);
  return 0;
}
