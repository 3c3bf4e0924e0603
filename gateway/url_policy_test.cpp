// URL normalisation and the origin allowlist: every spelling of a host is brought to one form,
// allowed only when that form is listed, and refused otherwise with a message naming it.
#include "gateway/url_policy.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace {

using codemode::config::Upstream;
using codemode::gateway::Allowed;
using codemode::gateway::normalise_url;
using codemode::gateway::NormalisedUrl;
using codemode::gateway::PolicyDecision;
using codemode::gateway::Refused;
using codemode::gateway::UrlPolicy;

// "origin target" for a normalised URL, or "refused: why".
std::string norm(std::string_view input, std::string_view base = "http://base.test/dir/page") {
  const auto result = normalise_url(input, base);
  if (const auto* url = std::get_if<NormalisedUrl>(&result)) return url->origin + " " + url->target;
  return "refused: " + std::get<std::string>(result);
}

UrlPolicy make_policy(std::vector<std::string> origins) {
  std::vector<Upstream> upstreams;
  for (auto& origin : origins) upstreams.push_back(Upstream{std::move(origin), {}});
  return UrlPolicy(upstreams);
}

// "allowed N origin target" or "refused: message".
std::string decide(const UrlPolicy& policy, std::string_view url) {
  const PolicyDecision decision = policy.decide(url);
  if (const auto* allowed = std::get_if<Allowed>(&decision)) {
    return "allowed " + std::to_string(allowed->upstream) + " " + allowed->url.origin + " " +
           allowed->url.target;
  }
  return "refused: " + std::get<Refused>(decision).message;
}

}  // namespace

TEST_CASE("scheme and host case, trailing dot and default ports normalise", "[gateway][url]") {
  CHECK(norm("HTTP://Example.TEST/Path") == "http://example.test /Path");
  CHECK(norm("http://example.test./") == "http://example.test /");
  CHECK(norm("http://example.test:80/") == "http://example.test /");
  CHECK(norm("https://example.test:443") == "https://example.test /");
  CHECK(norm("https://example.test:80/") == "https://example.test:80 /");
  CHECK(norm("http://example.test:0080/") == "http://example.test /");
  CHECK(norm("http://example.test:/") == "http://example.test /");
  CHECK(norm("http://example.test:8788/a?b=c#frag") == "http://example.test:8788 /a?b=c");
}

TEST_CASE("references resolve against the base", "[gateway][url]") {
  CHECK(norm("/products?limit=3") == "http://base.test /products?limit=3");
  CHECK(norm("other") == "http://base.test /dir/other");
  CHECK(norm("../x/./y") == "http://base.test /x/y");
  CHECK(norm("") == "http://base.test /dir/page");
  CHECK(norm("?q=1") == "http://base.test /dir/page?q=1");
  CHECK(norm("//evil.test/x") == "http://evil.test /x");
  CHECK(norm("http://a.test/a/b/../../../c") == "http://a.test /c");
  CHECK(norm("http://a.test/a/%2e%2e/c") == "http://a.test /c");
  CHECK(norm("/x", "") == "refused: relative URL with no base (no upstream is configured)");
}

TEST_CASE("IPv4 in decimal, hex, octal and short forms is dotted decimal", "[gateway][url]") {
  CHECK(norm("http://2130706433/") == "http://127.0.0.1 /");
  CHECK(norm("http://0x7f.1/") == "http://127.0.0.1 /");
  CHECK(norm("http://0177.0.0.1/") == "http://127.0.0.1 /");
  CHECK(norm("http://0x7F000001/") == "http://127.0.0.1 /");
  CHECK(norm("http://127.1/") == "http://127.0.0.1 /");
  CHECK(norm("http://127.0.1/") == "http://127.0.0.1 /");
  CHECK(norm("http://127.0.0.1./") == "http://127.0.0.1 /");
  CHECK(norm("http://%31%32%37.0.0.1/") == "http://127.0.0.1 /");
  CHECK(norm("http://1.2.3.4.5/").starts_with("refused: host is neither"));
  CHECK(norm("http://127.0.0.1.evil.test/") == "http://127.0.0.1.evil.test /");
  CHECK(norm("http://127.0.0.1.:8080/") == "http://127.0.0.1:8080 /");
  CHECK(norm("http://1.2.3.4:8080/") == "http://1.2.3.4:8080 /");
  CHECK(norm("http://0x1.2.3.4.5/").starts_with("refused: host is neither"));
  CHECK(norm("http://256.0.0.1/").starts_with("refused: host is neither"));
  CHECK(norm("http://4294967296/").starts_with("refused: host is neither"));
  CHECK(norm("http://09.1/").starts_with("refused: host is neither"));
  CHECK(norm("http://foo.0x1g/") == "http://foo.0x1g /");  // not a number: a name
}

TEST_CASE("IPv6 forms compare equal", "[gateway][url]") {
  CHECK(norm("http://[::1]/") == "http://[::1] /");
  CHECK(norm("http://[0:0:0:0:0:0:0:1]:8080/") == "http://[::1]:8080 /");
  CHECK(norm("http://[0000:0000::0001]/") == "http://[::1] /");
  CHECK(norm("http://[2001:DB8::A]/") == "http://[2001:db8::a] /");
  CHECK(norm("http://[::1/").starts_with("refused:"));
  CHECK(norm("http://[v1.x]/") == "refused: IPvFuture hosts are not supported");
}

TEST_CASE("percent-encoded hosts are decoded, then validated", "[gateway][url]") {
  CHECK(norm("http://%61llowed.test/") == "http://allowed.test /");
  CHECK(norm("http://ALLOWED%2eTEST/") == "http://allowed.test /");
  CHECK(norm("http://evil.test%00.allowed.test/").starts_with("refused: host is not a valid name"));
  CHECK(norm("http://evil.test%2fallowed.test/").starts_with("refused: host is not a valid name"));
  CHECK(norm("http://a%20b.test/").starts_with("refused: host is not a valid name"));
  CHECK(norm("http://%zz.test/") == "refused: URL does not parse");
}

TEST_CASE("backslashes count as slashes before the query", "[gateway][url]") {
  CHECK(norm("http://allowed.test\\@evil.test/") == "http://allowed.test /@evil.test/");
  CHECK(norm("http:\\\\evil.test\\x") == "http://evil.test /x");
  CHECK(norm("/\\evil.test/x") == "http://evil.test /x");
  CHECK(norm("http://a.test/p\\q?x=\\") == "http://a.test /p/q?x=%5C");
}

TEST_CASE("brackets in the query are sent as written, elsewhere encoded", "[gateway][url]") {
  // As WHATWG URL (node, browsers): an upstream that signs or matches the raw query sees it.
  CHECK(norm("/v1/customers?limit=2&expand[]=data.source") ==
        "http://base.test /v1/customers?limit=2&expand[]=data.source");
  CHECK(norm("http://a.test/p?a[b]=1 2&c=%5B") == "http://a.test /p?a[b]=1%202&c=%5B");
  CHECK(norm("http://a.test/x[1]?y") == "http://a.test /x%5B1%5D?y");
  CHECK(norm("?q[]=1") == "http://base.test /dir/page?q[]=1");
}

TEST_CASE("international hosts become their xn-- form", "[gateway][url]") {
  CHECK(norm("http://bücher.example/") == "http://xn--bcher-kva.example /");
  CHECK(norm("http://B%C3%BCcher.example/") == "http://xn--bcher-kva.example /");
  CHECK(norm("http://ＡＢＣ.test/") == "http://abc.test /");  // full-width letters map
  CHECK(norm("http://a\xff.test/").starts_with("refused: international host name is not valid"));
  CHECK(norm("http://bücher.example/ä?q=ü") == "http://xn--bcher-kva.example /%C3%A4?q=%C3%BC");
}

TEST_CASE("what cannot be normalised is refused", "[gateway][url]") {
  CHECK(norm("ftp://a.test/") == "refused: URL scheme ftp is not allowed (only http and https)");
  CHECK(norm("javascript:alert(1)").starts_with("refused: URL scheme javascript"));
  CHECK(norm("file:///etc/passwd").starts_with("refused: URL scheme file"));
  CHECK(norm("http://user:pw@a.test/") ==
        "refused: URL must not contain userinfo (user:password@)");
  CHECK(norm("http://@a.test/") == "refused: URL must not contain userinfo (user:password@)");
  CHECK(norm("http:///a.test/") == "refused: URL has no host");
  CHECK(norm("http:a.test") == "refused: URL has no host");
  CHECK(norm("http://a.test:65536/") == "refused: URL port is out of range (1-65535)");
  CHECK(norm("http://a.test:0/") == "refused: URL port is out of range (1-65535)");
  CHECK(norm("http://a.test:8x/") == "refused: URL does not parse (host or port)");
  CHECK(norm("http://a..test/").starts_with("refused: host is not a valid name"));
  CHECK(norm("http://a.test/\r\nHost: evil") == "refused: URL contains a control character");
  CHECK(norm("http://a.test/x y") == "http://a.test /x%20y");
  CHECK(norm("  http://a.test/  ") == "http://a.test /");
}

TEST_CASE("only listed origins are allowed", "[gateway][policy]") {
  const UrlPolicy policy = make_policy({"http://127.0.0.1:8788", "https://api.example.com"});
  CHECK(policy.problems().empty());
  CHECK(decide(policy, "/products?limit=3") == "allowed 0 http://127.0.0.1:8788 /products?limit=3");
  CHECK(decide(policy, "http://127.0.0.1:8788/x") == "allowed 0 http://127.0.0.1:8788 /x");
  CHECK(decide(policy, "http://2130706433:8788/x") == "allowed 0 http://127.0.0.1:8788 /x");
  CHECK(decide(policy, "http://0x7f.1:8788/x") == "allowed 0 http://127.0.0.1:8788 /x");
  CHECK(decide(policy, "http://0177.0.0.1:8788/") == "allowed 0 http://127.0.0.1:8788 /");
  CHECK(decide(policy, "HTTPS://API.EXAMPLE.COM.:443/v1") ==
        "allowed 1 https://api.example.com /v1");
  CHECK(decide(policy, "https://api.example.com:443/") == "allowed 1 https://api.example.com /");
  CHECK(decide(policy, "https://%61pi.example.com/") == "allowed 1 https://api.example.com /");

  CHECK(decide(policy, "http://evil.test/") == "refused: origin http://evil.test is not allowed");
  CHECK(decide(policy, "http://127.0.0.1/") == "refused: origin http://127.0.0.1 is not allowed");
  CHECK(decide(policy, "http://127.0.0.1:8789/") ==
        "refused: origin http://127.0.0.1:8789 is not allowed");
  CHECK(decide(policy, "https://127.0.0.1:8788/") ==
        "refused: origin https://127.0.0.1:8788 is not allowed");
  CHECK(decide(policy, "http://api.example.com/") ==
        "refused: origin http://api.example.com is not allowed");
  CHECK(decide(policy, "http://localhost:8788/") ==
        "refused: origin http://localhost:8788 is not allowed");
  CHECK(decide(policy, "http://[::1]:8788/") == "refused: origin http://[::1]:8788 is not allowed");
  CHECK(decide(policy, "//evil.test/") == "refused: origin http://evil.test is not allowed");
  CHECK(decide(policy, "http://127.0.0.1:8788\\@evil.test/") ==
        "allowed 0 http://127.0.0.1:8788 /@evil.test/");
  CHECK(decide(policy, "http://127.0.0.1:8788@evil.test/") ==
        "refused: URL must not contain userinfo (user:password@)");
  CHECK(decide(policy, "http://evil.test#@127.0.0.1:8788/") ==
        "refused: origin http://evil.test is not allowed");
  CHECK(decide(policy, "http://evil.test?@127.0.0.1:8788/") ==
        "refused: origin http://evil.test is not allowed");
}

TEST_CASE("upstream origins are normalised with the same rules", "[gateway][policy]") {
  const UrlPolicy policy = make_policy({"http://[0:0::1]:9000", "http://bücher.example"});
  CHECK(policy.problems().empty());
  CHECK(policy.origins() ==
        std::vector<std::string>{"http://[::1]:9000", "http://xn--bcher-kva.example"});
  CHECK(decide(policy, "http://[::0:1]:9000/") == "allowed 0 http://[::1]:9000 /");
  CHECK(decide(policy, "http://xn--bcher-kva.example/") ==
        "allowed 1 http://xn--bcher-kva.example /");

  const UrlPolicy bad = make_policy({"http://0x1.2.3.4.5", "http://a.test", "http://A.test:80"});
  CHECK(bad.problems().size() == 2);
  CHECK(decide(bad, "http://a.test/") == "allowed 1 http://a.test /");
}

TEST_CASE("no upstreams: nothing is allowed", "[gateway][policy]") {
  const UrlPolicy policy = make_policy({});
  CHECK(decide(policy, "/x") == "refused: relative URL with no base (no upstream is configured)");
  CHECK(decide(policy, "http://a.test/") == "refused: origin http://a.test is not allowed");
}

TEST_CASE("a NUL in an international host is refused, not cut short", "[gateway][url]") {
  // Found by fuzz/url_policy: IDNA took the decoded host as a C string, so "a.test\0é.evil"
  // became "a.test", and a host IDNA maps to nothing was read past its start.
  CHECK(norm("http://a.test%00%C3%A9.evil/") == "refused: host is not a valid name");
  CHECK(norm("http://%00%C3%A9/") == "refused: host is not a valid name");
  CHECK(norm("http://%C2%AD/").starts_with("refused: "));
}

TEST_CASE("relative URLs go under the first upstream's base path, the allowlist stays per origin",
          "[gateway][policy][base_path]") {
  std::vector<Upstream> upstreams{Upstream{"https://slack.com", {}},
                                  Upstream{"https://other.test", {}}};
  upstreams.front().base_path = "/api";
  const UrlPolicy policy(upstreams);
  CHECK(policy.base() == "https://slack.com/api/");
  CHECK(policy.base_path() == "/api");
  CHECK(decide(policy, "/conversations.list") ==
        "allowed 0 https://slack.com /api/conversations.list");
  CHECK(decide(policy, "conversations.list?limit=3") ==
        "allowed 0 https://slack.com /api/conversations.list?limit=3");
  CHECK(decide(policy, "?q=1") == "allowed 0 https://slack.com /api/?q=1");
  CHECK(decide(policy, "  /x") == "allowed 0 https://slack.com /api/x");
  CHECK(decide(policy, "\\x") == "allowed 0 https://slack.com /api/x");
  // Already under it (as the description's `servers` shows it): not put there twice.
  CHECK(decide(policy, "/api/conversations.list") ==
        "allowed 0 https://slack.com /api/conversations.list");
  CHECK(decide(policy, "/api") == "allowed 0 https://slack.com /api");
  CHECK(decide(policy, "/api?x=1") == "allowed 0 https://slack.com /api?x=1");
  CHECK(decide(policy, "/apiary") == "allowed 0 https://slack.com /api/apiary");
  // Dot segments may leave the base path, never the origin.
  CHECK(decide(policy, "/../admin") == "allowed 0 https://slack.com /admin");
  CHECK(decide(policy, "/%2e%2e/%2e%2e/admin") == "allowed 0 https://slack.com /admin");
  // Absolute URLs and network-path references are taken as written: no base path.
  CHECK(decide(policy, "https://slack.com/conversations.list") ==
        "allowed 0 https://slack.com /conversations.list");
  CHECK(decide(policy, "https://other.test/x") == "allowed 1 https://other.test /x");
  CHECK(decide(policy, "//other.test/x") == "allowed 1 https://other.test /x");
  CHECK(decide(policy, "/\\evil.test/x") == "refused: origin https://evil.test is not allowed");
  CHECK(decide(policy, "\\\\evil.test/x") == "refused: origin https://evil.test is not allowed");
  CHECK(decide(policy, " //evil.test/x") == "refused: origin https://evil.test is not allowed");
  CHECK(decide(policy, "/@evil.test/x") == "allowed 0 https://slack.com /api/@evil.test/x");
  // A redirect's Location resolves against the URL requested, not under the base path.
  const PolicyDecision redirect = policy.decide("/elsewhere", "https://slack.com/api/x");
  CHECK(std::get<Allowed>(redirect).url.target == "/elsewhere");

  CHECK(codemode::gateway::under_base_path("/x", "") == "/x");
  CHECK(codemode::gateway::under_base_path("/v2/pet", "/v2") == "/v2/pet");
  CHECK(codemode::gateway::under_base_path("/pet", "/v2") == "/v2/pet");
}
