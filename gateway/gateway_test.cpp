// The gateway facade end to end: policy, credentials, redirects and budgets against real
// loopback servers, one of them a forbidden origin that must never be contacted, and the real
// MarketHub fixture as an upstream.
#include "gateway/gateway.h"

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <fixtures/markethub/fixture_server.h>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "gateway/test_server.h"
#include "net/ascii.h"

namespace {

using namespace codemode::gateway;
using namespace std::chrono_literals;
using codemode::config::Upstream;
using testing::IoThread;
using testing::TestServer;

constexpr const char* kSecret = "Bearer realsecrettoken123";
constexpr const char* kSecretWord = "realsecrettoken123";

std::unique_ptr<Gateway> make_gateway(IoThread& io, GatewayOptions options) {
  auto created = Gateway::create(io.io(), std::move(options));
  if (auto* problems = std::get_if<std::vector<std::string>>(&created)) {
    FAIL("gateway problems: " << problems->at(0));
  }
  return std::move(std::get<std::unique_ptr<Gateway>>(created));
}

std::unique_ptr<Gateway> make_gateway(IoThread& io, std::vector<Upstream> upstreams,
                                      codemode::config::Limits limits = {},
                                      OperationPolicyOptions operations = {}) {
  GatewayOptions options;
  options.upstreams = std::move(upstreams);
  options.limits = limits;
  options.operations = std::move(operations);
  options.request_body_bytes = 1000;
  return make_gateway(io, std::move(options));
}

FetchResult fetch(Gateway& gateway, CallBudget& budget, OutboundRequest request,
                  std::chrono::milliseconds timeout = 5000ms, const Caller& caller = {}) {
  auto promise = std::make_shared<std::promise<FetchResult>>();
  auto future = promise->get_future();
  gateway.fetch(
      std::move(request), budget, Clock::now() + timeout,
      [promise](FetchResult result) { promise->set_value(std::move(result)); }, caller);
  REQUIRE(future.wait_for(20s) == std::future_status::ready);
  return future.get();
}

// The status as text ("200"), or the error ("policy: ...").
std::string outcome_of(FetchResult result) {
  if (auto* error = std::get_if<GatewayError>(&result)) return error->text();
  return std::to_string(std::get<InboundResponse>(result).status);
}

InboundResponse response_of(FetchResult result) {
  if (auto* error = std::get_if<GatewayError>(&result)) FAIL("unexpected error: " << error->text());
  return std::get<InboundResponse>(std::move(result));
}

// "policy: ..." / "runtime: ..."
std::string error_of(FetchResult result) {
  if (auto* response = std::get_if<InboundResponse>(&result)) {
    FAIL("unexpected response: " << response->status);
  }
  return std::get<GatewayError>(result).text();
}

OutboundRequest get(std::string url, Headers headers = {}) {
  return OutboundRequest{"GET", std::move(url), std::move(headers), {}};
}

// Two loopback servers: `allowed` is the one upstream (with a credential), `forbidden` is not
// on the list and must see no connection at all.
struct Harness {
  IoThread io;
  TestServer allowed;
  TestServer forbidden;
  std::unique_ptr<Gateway> gateway;
  CallBudget budget{1000};

  explicit Harness(codemode::config::Limits limits = {}, std::string authorization = kSecret) {
    gateway = make_gateway(
        io,
        {Upstream{allowed.origin(), {{"Authorization", authorization}, {"X-Api-Key", "key-abc"}}}},
        limits);
  }
  ~Harness() { CHECK(forbidden.connections() == 0); }

  FetchResult run(OutboundRequest request) { return fetch(*gateway, budget, std::move(request)); }
  std::string allowed_port() const { return std::to_string(allowed.port()); }
  std::string forbidden_port() const { return std::to_string(forbidden.port()); }
};

// The values of every header called `name` (case-insensitive).
std::vector<std::string> values_of(const InboundResponse& response, std::string_view name) {
  std::vector<std::string> values;
  for (const auto& [field, value] : response.headers) {
    if (field.size() == name.size() &&
        std::equal(field.begin(), field.end(), name.begin(), [](char a, char b) {
          return codemode::net::ascii_lower(a) == codemode::net::ascii_lower(b);
        })) {
      values.push_back(value);
    }
  }
  return values;
}

std::size_t count(std::string_view text, std::string_view needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("credentials are injected last, overriding what the code set", "[gateway][credentials]") {
  Harness h;
  const auto echo = response_of(h.run(get("/echo", {{"authorization", "Bearer fake"},
                                                    {"X-API-KEY", "fake"},
                                                    {"Host", "evil.test"},
                                                    {"Content-Length", "99"},
                                                    {"Cookie", "a=b"},
                                                    {"Accept", "application/json"}})));
  CHECK(echo.status == 200);
  // The upstream echoes what it received: the configured values replaced the code's, and the
  // gateway redacts them on the way back, so the code never holds a credential.
  CHECK(echo.body.find("fake") == std::string::npos);
  CHECK(echo.body.find("realsecrettoken123") == std::string::npos);
  CHECK(echo.body.find("key-abc") == std::string::npos);
  CHECK(count(echo.body, "Authorization: [redacted]\n") == 1);
  CHECK(echo.body.find("X-Api-Key: [redacted]\n") != std::string::npos);
  CHECK(echo.body.find("Host: 127.0.0.1:" + h.allowed_port() + "\n") != std::string::npos);
  CHECK(echo.body.find("evil.test") == std::string::npos);
  CHECK(echo.body.find("Content-Length") == std::string::npos);
  CHECK(echo.body.find("Cookie: a=b\n") != std::string::npos);
  CHECK(echo.body.find("Accept: application/json\n") != std::string::npos);
  CHECK(echo.final_url == h.allowed.origin() + "/echo");
}

TEST_CASE("off-list origins are refused in every spelling, with no connection",
          "[gateway][policy]") {
  Harness h;
  const std::string fp = h.forbidden_port();
  const std::string refused = "policy: origin http://127.0.0.1:" + fp + " is not allowed";
  CHECK(error_of(h.run(get(h.forbidden.origin() + "/echo"))) == refused);
  CHECK(error_of(h.run(get("http://2130706433:" + fp + "/echo"))) == refused);
  CHECK(error_of(h.run(get("http://0x7f.1:" + fp + "/echo"))) == refused);
  CHECK(error_of(h.run(get("http://0177.0.0.1:" + fp + "/echo"))) == refused);
  CHECK(error_of(h.run(get("HTTP://127.0.0.1.:" + fp + "/echo"))) == refused);
  CHECK(error_of(h.run(get("//127.0.0.1:" + fp + "/echo"))) == refused);
  CHECK(error_of(h.run(get("/\\127.0.0.1:" + fp + "/echo"))) == refused);
  CHECK(error_of(h.run(get("http://%31%32%37.0.0.1:" + fp + "/echo"))) == refused);
  CHECK(error_of(h.run(get("http://localhost:" + fp + "/"))) ==
        "policy: origin http://localhost:" + fp + " is not allowed");
  CHECK(error_of(h.run(get("http://[::ffff:127.0.0.1]:" + fp + "/"))) ==
        "policy: origin http://[::ffff:127.0.0.1]:" + fp + " is not allowed");
  CHECK(error_of(h.run(get("https://127.0.0.1:" + h.allowed_port() + "/"))) ==
        "policy: origin https://127.0.0.1:" + h.allowed_port() + " is not allowed");
  CHECK(error_of(h.run(get("http://user:pw@127.0.0.1:" + h.allowed_port() + "/"))) ==
        "policy: URL must not contain userinfo (user:password@)");
  CHECK(error_of(h.run(get("file:///etc/passwd"))) ==
        "policy: URL scheme file is not allowed (only http and https)");
  CHECK(error_of(h.run(get("http://[::1"))) == "policy: URL does not parse");
  CHECK(h.allowed.requests() == 0);

  // The same spellings of the allowed origin are allowed.
  const std::string ap = h.allowed_port();
  CHECK(response_of(h.run(get("http://2130706433:" + ap + "/echo"))).status == 200);
  CHECK(response_of(h.run(get("http://0x7f.1:" + ap + "/echo"))).status == 200);
  CHECK(response_of(h.run(get("http://127.0.0.1:" + ap + "\\@127.0.0.1:" + fp + "/echo"))).status ==
        404);  // path /@127.0.0.1:PORT/echo on the allowed server
}

TEST_CASE("methods, header bytes and bodies are checked before anything is sent",
          "[gateway][policy]") {
  Harness h;
  CHECK(error_of(h.run(OutboundRequest{"CONNECT", "/echo", {}, {}})) ==
        "policy: method CONNECT is not allowed (GET, POST, PUT, PATCH, DELETE, HEAD)");
  CHECK(error_of(h.run(OutboundRequest{"GET\r\nX: y", "/echo", {}, {}})) ==
        "policy: method is not allowed (GET, POST, PUT, PATCH, DELETE, HEAD)");
  CHECK(error_of(h.run(get("/echo", {{"X-Token", "abc\r\nX-Injected: 1"}}))) ==
        "policy: header X-Token has an invalid value (CR, LF, NUL or another control character)");
  CHECK(error_of(h.run(get("/echo", {{"X-Bad\r\nName", "v"}}))) ==
        "policy: invalid header name (not an HTTP token)");
  CHECK(error_of(h.run(OutboundRequest{"GET", "/echo", {}, "body"})) ==
        "policy: GET request cannot have a body");
  CHECK(error_of(h.run(OutboundRequest{"POST", "/echo", {}, std::string(1001, 'a')})) ==
        "policy: request body exceeds 1000 bytes");
  CHECK(h.allowed.requests() == 0);

  const auto posted = response_of(h.run(OutboundRequest{"post", "/echo", {}, "hi"}));
  CHECK(posted.body.starts_with("POST /echo\n"));
  CHECK(posted.body.ends_with("\n\nhi"));
}

TEST_CASE("the N+1th fetch of a call is refused", "[gateway][budget]") {
  IoThread io;
  TestServer server;
  auto gateway = make_gateway(io, {Upstream{server.origin(), {}}});
  CallBudget budget(2);
  CHECK(response_of(fetch(*gateway, budget, get("/echo"))).status == 200);
  CHECK(error_of(fetch(*gateway, budget, get("http://evil.test/"))) ==
        "policy: origin http://evil.test is not allowed");  // refused: costs nothing
  CHECK(response_of(fetch(*gateway, budget, get("/echo"))).status == 200);
  CHECK(error_of(fetch(*gateway, budget, get("/echo"))) == "policy: subrequest limit 2 reached");
  CHECK(server.requests() == 2);
  CallBudget next_call(2);
  CHECK(response_of(fetch(*gateway, next_call, get("/echo"))).status == 200);
}

TEST_CASE("redirects are followed only within the origin", "[gateway][redirect]") {
  Harness h;
  const std::string fp = h.forbidden_port();
  h.allowed.add_redirect("/same", 302, "/echo/after");
  h.allowed.add_redirect("/absolute", 301, h.allowed.origin() + "/echo/abs");
  h.allowed.add_redirect("/away", 302, h.forbidden.origin() + "/echo");
  h.allowed.add_redirect("/away-trick", 307, "http://2130706433:" + fp + "/echo");
  h.allowed.add_redirect("/away-relative", 302, "//127.0.0.1:" + fp + "/echo");
  h.allowed.add_redirect("/away-scheme", 302, "https://127.0.0.1:" + h.allowed_port() + "/");
  h.allowed.add_redirect("/bad-location", 302, "http://[::1");
  h.allowed.add_redirect("/loop", 302, "/loop");
  h.allowed.add_redirect("/see-other", 303, "/echo/get");
  h.allowed.add_redirect("/temporary", 307, "/echo/post");

  const auto same = response_of(h.run(get("/same")));
  CHECK(same.status == 200);
  CHECK(same.redirects == 1);
  CHECK(same.final_url == h.allowed.origin() + "/echo/after");
  CHECK(same.body.find("Authorization: [redacted]\n") != std::string::npos);  // re-injected
  CHECK(response_of(h.run(get("/absolute"))).final_url == h.allowed.origin() + "/echo/abs");

  for (const char* path :
       {"/away", "/away-trick", "/away-relative", "/away-scheme", "/bad-location"}) {
    const auto away = response_of(h.run(get(path)));
    CHECK(away.redirects == 0);
    CHECK(away.status >= 301);
    CHECK(away.final_url == h.allowed.origin() + path);
  }

  const std::uint64_t before = h.allowed.requests();
  const auto loop = response_of(h.run(get("/loop")));
  CHECK(loop.status == 302);
  CHECK(loop.redirects == kMaxRedirects);
  CHECK(h.allowed.requests() - before == kMaxRedirects + 1);

  const auto see_other = response_of(h.run(OutboundRequest{
      "POST", "/see-other", {{"Content-Type", "application/json"}, {"X-Keep", "1"}}, "{}"}));
  CHECK(see_other.body.starts_with("GET /echo/get\n"));
  CHECK(see_other.body.find("Content-Type") == std::string::npos);
  CHECK(see_other.body.find("X-Keep: 1\n") != std::string::npos);
  CHECK(see_other.body.ends_with("\n\n"));

  const auto temporary = response_of(h.run(OutboundRequest{"PUT", "/temporary", {}, "data"}));
  CHECK(temporary.body.starts_with("PUT /echo/post\n"));
  CHECK(temporary.body.ends_with("\n\ndata"));
}

TEST_CASE("upstream failures are runtime errors and the gateway keeps serving",
          "[gateway][runtime]") {
  codemode::config::Limits limits;
  limits.response_bytes = 1000;
  Harness h(limits);
  const std::string origin = h.allowed.origin();
  CHECK(response_of(h.run(get("/status/500"))).status == 500);
  CHECK(error_of(h.run(get("/reset")))
            .starts_with("runtime: connection to " + origin + " closed before a complete"));
  CHECK(error_of(h.run(get("/big/1001"))) == "runtime: response body exceeds 1000 bytes");
  CHECK(error_of(h.run(get("/malformed"))).starts_with("runtime: malformed HTTP response"));
  CHECK(error_of(fetch(*h.gateway, h.budget, get("/slow"), 200ms)) ==
        "runtime: request to " + origin + " timed out");
  CHECK(response_of(h.run(get("/echo"))).status == 200);
}

TEST_CASE("credentials never appear in our errors or logs", "[gateway][credentials]") {
  std::ostringstream captured;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("gateway-test", sink);
  logger->set_level(spdlog::level::debug);
  spdlog::set_default_logger(logger);
  {
    Harness h;
    // The upstream echoes the credential: redacted before the code can see it...
    const auto echo = response_of(h.run(get("/echo/" + std::string(kSecretWord))));
    CHECK(echo.body.find(kSecretWord) == std::string::npos);
    CHECK(echo.body.find("[redacted]") != std::string::npos);
    // ...but our messages never repeat it, even when the code puts it into a URL.
    const std::string refused =
        error_of(h.run(get("http://" + std::string(kSecretWord) + ".evil.test/")));
    CHECK(refused == "policy: (withheld: it would show a configured credential)");
    CHECK(error_of(h.run(get("/echo", {{"X-Leak", std::string(kSecret) + "\n"}}))) ==
          "policy: header X-Leak has an invalid value (CR, LF, NUL or another control character)");
    h.run(get("/status/500"));
  }
  spdlog::set_default_logger(previous);
  const std::string log = captured.str();
  CHECK(log.find("GET http://127.0.0.1:") != std::string::npos);
  CHECK(log.find("-> 500") != std::string::npos);
  CHECK(log.find(kSecretWord) == std::string::npos);
  CHECK(log.find("key-abc") == std::string::npos);
}

TEST_CASE("completions run on the I/O thread, refusals too", "[gateway][threads]") {
  IoThread io;
  TestServer server;
  auto gateway = make_gateway(io, {Upstream{server.origin(), {}}});
  CallBudget budget(10);
  std::vector<std::future<std::thread::id>> threads;
  std::vector<std::shared_ptr<std::promise<std::thread::id>>> promises;
  for (const char* url : {"/echo/1", "/echo/2", "/echo/3", "http://evil.test/", "/echo/4"}) {
    auto promise = std::make_shared<std::promise<std::thread::id>>();
    threads.push_back(promise->get_future());
    gateway->fetch(get(url), budget, Clock::now() + 5s,
                   [promise](FetchResult) { promise->set_value(std::this_thread::get_id()); });
  }
  for (auto& thread : threads) {
    REQUIRE(thread.wait_for(20s) == std::future_status::ready);
    CHECK(thread.get() != std::this_thread::get_id());
  }
  CHECK(server.requests() == 4);
}

TEST_CASE("start-up problems are reported together", "[gateway][config]") {
  IoThread io;
  GatewayOptions options;
  options.upstreams = {Upstream{"http://0x1.2.3.4.5", {}}};
  options.ca_file = "/nonexistent/ca.pem";
  auto created = Gateway::create(io.io(), options);
  REQUIRE(std::holds_alternative<std::vector<std::string>>(created));
  CHECK(std::get<std::vector<std::string>>(created).size() == 2);
}

TEST_CASE("MarketHub end to end: the injected token is what gets in", "[gateway][markethub]") {
  using codemode::fixtures::MarkethubOptions;
  using codemode::fixtures::MarkethubServer;
  MarkethubServer markethub(MarkethubOptions{.token = "markethub-test-token-5b1e"});
  markethub.start();
  IoThread io;

  auto with_token = make_gateway(
      io, {Upstream{markethub.origin(), {{"Authorization", "Bearer markethub-test-token-5b1e"}}}});
  CallBudget budget(10);
  const auto products = response_of(fetch(*with_token, budget, get("/products?limit=3")));
  CHECK(products.status == 200);
  const auto json = nlohmann::json::parse(products.body);
  CHECK(json.at("items").size() == 3);
  // A token the code sets itself is overridden by the configured one.
  CHECK(response_of(fetch(*with_token, budget,
                          get("/products?limit=1", {{"Authorization", "Bearer wrong"}})))
            .status == 200);

  auto without = make_gateway(io, {Upstream{markethub.origin(), {}}});
  CHECK(response_of(fetch(*without, budget, get("/products?limit=3"))).status == 401);
  CHECK(response_of(fetch(*without, budget,
                          get("/products?limit=3",
                              {{"Authorization", "Bearer markethub-test-token-5b1e"}})))
            .status == 200);  // without credentials configured, the code's header is sent
}

TEST_CASE("each principal's requests carry its own credential and follow its own policy",
          "[gateway][principals]") {
  using codemode::fixtures::MarkethubOptions;
  using codemode::fixtures::MarkethubServer;
  MarkethubServer markethub(MarkethubOptions{.token = "alice-key-7d0c9e2b"});
  markethub.start();
  IoThread io;
  GatewayOptions options;
  options.upstreams = {Upstream{markethub.origin(), {{"Authorization", "Bearer shared-key-1f4a"}}}};
  options.principals["alice"] = PrincipalProfile{
      {Upstream{markethub.origin(), {{"Authorization", "Bearer alice-key-7d0c9e2b"}}}},
      OperationPolicyOptions{
          .operations = std::nullopt, .base_paths = {}, .methods = {Method::get, Method::head}}};
  options.principals["bob"] = PrincipalProfile{
      {Upstream{markethub.origin(), {{"Authorization", "Bearer bob-key-93be1f07"}}}}, {}};
  const auto gateway = make_gateway(io, std::move(options));
  CallBudget budget(100);
  const auto status_as = [&](std::string principal, OutboundRequest request,
                             std::string profile = {}) {
    return outcome_of(fetch(*gateway, budget, std::move(request), 5s,
                            Caller{std::move(principal), std::nullopt, std::move(profile)}));
  };
  // The fixture takes only alice's key: only her requests get in, interleaved with the others'
  // on the same pooled connections.
  for (int round = 0; round < 3; ++round) {
    CHECK(status_as("alice", get("/products?limit=1")) == "200");
    CHECK(status_as("bob", get("/products?limit=1")) == "401");
    CHECK(status_as("", get("/products?limit=1")) == "401");
    CHECK(status_as("carol", get("/products?limit=1")) == "401");  // not listed: the defaults
  }
  // A caller without an entry of its own takes the profile its token's claims matched; its own
  // entry wins over one it matched.
  CHECK(status_as("sub:dave", get("/products?limit=1"), "alice") == "200");
  CHECK(status_as("bob", get("/products?limit=1"), "alice") == "401");
  CHECK(status_as("sub:dave", get("/products?limit=1"), "nobody") == "401");
  // Alice's policy is read-only; the others keep the top-level one, which allows writes.
  const OutboundRequest post{"POST", "/orders", {{"Content-Type", "application/json"}}, "{}"};
  CHECK(status_as("alice", post) == "policy: method POST is not allowed here (allowed: GET, HEAD)");
  CHECK(status_as("bob", post) == "401");
}

TEST_CASE("a scoped caller's requests need the scopes of their method", "[gateway][scopes]") {
  IoThread io;
  TestServer upstream;
  GatewayOptions options;
  options.upstreams = {Upstream{upstream.origin(), {}}};
  options.request_scopes = RequestScopes{{"api:read"}, {"api:write", "api:audit"}, std::nullopt};
  const auto gateway = make_gateway(io, std::move(options));
  CallBudget budget(100);
  const auto outcome = [&](const Caller& caller, std::string method) {
    return outcome_of(
        fetch(*gateway, budget, OutboundRequest{std::move(method), "/echo", {}, {}}, 5s, caller));
  };
  const Caller reader{"sub:alice", std::vector<std::string>{"api:read"}, ""};
  const Caller writer{"sub:bob", std::vector<std::string>{"api:read", "api:write", "api:audit"},
                      ""};
  const Caller nothing{"client:ci", std::vector<std::string>{}, ""};
  const Caller unscoped{"ops", std::nullopt, ""};  // a static token
  CHECK(outcome(reader, "GET") == "200");
  CHECK(outcome(reader, "HEAD") == "200");
  CHECK(outcome(reader, "DELETE") ==
        "policy: DELETE requests need scope api:write api:audit, which the caller's access token "
        "lacks");
  CHECK(outcome(writer, "POST") == "200");
  CHECK(outcome(nothing, "GET") ==
        "policy: GET requests need scope api:read, which the caller's access token lacks");
  CHECK(outcome(unscoped, "DELETE") == "200");
  // Refused requests never left, and cost no subrequest.
  CHECK(upstream.requests() == 4);
  CHECK(budget.used() == 4);
}

TEST_CASE("a scoped caller's request to a declared operation needs one of its scope alternatives",
          "[gateway][scopes]") {
  IoThread io;
  TestServer upstream;
  GatewayOptions options;
  options.upstreams = {Upstream{upstream.origin(), {}}};
  OperationPolicyOptions declared;
  declared.operations = std::vector<Operation>{
      {Method::get, "/echo/{id}", {{"items:read"}}},
      {Method::post, "/echo/{id}", {{"items:write", "items:read"}, {"admin"}}},
      {Method::put, "/echo/{id}", {}}};
  options.request_scopes.operations = declared;
  const auto gateway = make_gateway(io, std::move(options));
  CallBudget budget(100);
  const auto outcome = [&](std::vector<std::string> scopes, std::string method,
                           std::string target) {
    return outcome_of(fetch(*gateway, budget,
                            OutboundRequest{std::move(method), std::move(target), {}, {}}, 5s,
                            Caller{"sub:x", std::move(scopes), ""}));
  };
  CHECK(outcome({"items:read"}, "GET", "/echo/7?x=1") == "200");
  CHECK(outcome({"items:read"}, "HEAD", "/echo/7") == "200");  // HEAD where GET is declared
  CHECK(outcome({}, "GET", "/echo/7") ==
        "policy: GET /echo/{id} needs scope items:read (the API description's security), which "
        "the caller's access token lacks");
  CHECK(outcome({"items:read"}, "POST", "/echo/7") ==
        "policy: POST /echo/{id} needs scope items:write (the API description's security), which "
        "the caller's access token lacks");
  CHECK(outcome({"items:write", "items:read"}, "POST", "/echo/7") == "200");
  CHECK(outcome({"admin"}, "POST", "/echo/7") == "200");  // the other alternative
  CHECK(outcome({}, "PUT", "/echo/7") == "200");          // declared with no scope
  CHECK(outcome({}, "GET", "/echo") == "200");            // no declared operation: no scope
  CHECK(upstream.requests() == 6);
}

TEST_CASE("an upstream with token_exchange gets the caller's exchanged token as Authorization",
          "[gateway][exchange]") {
  IoThread io;
  TestServer upstream;
  GatewayOptions options;
  Upstream exchanging{upstream.origin(), {{"X-Api-Key", "static-api-key-7f3e"}}};
  exchanging.token_exchange = codemode::config::TokenExchange{"orders", "", {}, "mcp", "s", ""};
  options.upstreams = {exchanging};
  std::vector<std::string> asked;  // the keys and subject tokens the exchange was asked for
  std::mutex asked_mutex;
  options.exchange_token = [&](const codemode::config::TokenExchange& settings,
                               const std::string& key, const CallerAccessToken& token,
                               ExchangeDone done) {
    {
      std::lock_guard lock(asked_mutex);
      asked.push_back(key + " " + token.value + " " + settings.audience);
    }
    if (token.value == "refused-caller-token") {
      return done(GatewayError{ErrorKind::runtime, "the authorization server refused (400)"});
    }
    done(ExchangedToken{"downstream-for-" + token.value});
  };
  const auto gateway = make_gateway(io, std::move(options));
  CallBudget budget(100);
  const auto caller = [](std::string token) {
    Caller who{"sub:alice", std::nullopt, ""};
    if (!token.empty()) {
      who.access_token =
          std::make_shared<const CallerAccessToken>(CallerAccessToken{std::move(token), 0});
    }
    return who;
  };
  const OutboundRequest request{"GET", "/echo/x", {{"Authorization", "Bearer code-set-value"}}, {}};

  const InboundResponse sent =
      response_of(fetch(*gateway, budget, request, 5s, caller("alice-access-token")));
  // The upstream echoes what it got: the exchanged token, redacted before the code sees it; never
  // the caller's token or what the code set.
  CHECK(sent.body.find("Authorization: Bearer [redacted]\n") != std::string::npos);
  CHECK(sent.body.find("X-Api-Key: [redacted]") != std::string::npos);  // configured: withheld
  CHECK(sent.body.find("alice-access-token") == std::string::npos);
  CHECK(sent.body.find("code-set-value") == std::string::npos);
  {
    std::lock_guard lock(asked_mutex);
    // Cached under a hash of the caller's token (never the token) and the origin.
    REQUIRE(asked.size() == 1);
    CHECK(asked[0].starts_with("sha256:"));
    CHECK(asked[0].ends_with(" " + upstream.origin() + " alice-access-token orders"));
    CHECK(asked[0].find("alice-access-token") == asked[0].size() - 25);
  }

  CHECK(error_of(fetch(*gateway, budget, request, 5s, caller(""))) ==
        "policy: requests to " + upstream.origin() +
            " carry a token exchanged for the caller's OAuth access token, and this call came "
            "without one (a static token or stdio)");
  CHECK(error_of(fetch(*gateway, budget, request, 5s, caller("refused-caller-token"))) ==
        "runtime: token exchange for " + upstream.origin() +
            " failed: the authorization server refused (400)");
  CHECK(upstream.requests() == 1);
}

TEST_CASE("a principal's profile must list the configured upstreams", "[gateway][principals]") {
  IoThread io;
  GatewayOptions options;
  options.upstreams = {Upstream{"http://127.0.0.1:1", {}}};
  options.principals["mallory"] = PrincipalProfile{{Upstream{"http://127.0.0.1:2", {}}}, {}};
  auto created = Gateway::create(io.io(), std::move(options));
  REQUIRE(std::holds_alternative<std::vector<std::string>>(created));
  CHECK(std::get<std::vector<std::string>>(created).at(0) ==
        "principal mallory: its upstreams must be the configured ones, in the same order");
}

// ---------------------------------------------------------------------------------------------
// Hostile and careless upstreams: what they send must neither reach another call through the
// connection pool nor carry a credential to the code.

TEST_CASE("interim 1xx responses are skipped, so a call never reads another call's response",
          "[gateway][hostile]") {
  Harness h;
  const std::string origin = h.allowed.origin();
  CallBudget call_a(10);
  CallBudget call_b(10);
  // 103 first; the 200 comes when the connection sees its next request (or 300 ms later).
  const auto a = response_of(fetch(*h.gateway, call_a, get("/early-hints/A")));
  CHECK(a.status == 200);
  CHECK(a.body == "private body of A");
  const auto b = response_of(fetch(*h.gateway, call_b, get("/echo/B")));
  CHECK(b.status == 200);
  CHECK(b.body.starts_with("GET /echo/B\n"));
  CHECK(b.body.find("private body") == std::string::npos);

  const auto interim = response_of(h.run(get("/interim")));
  CHECK(interim.status == 200);
  CHECK(interim.body == "after interim");
  CHECK(error_of(h.run(get("/interim-flood"))) == "runtime: malformed HTTP response from " +
                                                      origin +
                                                      " (more than 16 interim 1xx responses)");
  CHECK(error_of(h.run(get("/switching"))) == "runtime: malformed HTTP response from " + origin +
                                                  " (101 Switching Protocols, never asked for)");
  CHECK(response_of(h.run(get("/echo"))).body.starts_with("GET /echo\n"));
}

TEST_CASE("a HEAD, 204 or 304 answer that carries a body does not go back to the pool",
          "[gateway][hostile]") {
  Harness h;
  // Each answer declares a body it must not have and sends it once the next request arrives:
  // the bytes of a whole response, which a reused connection would read as the next answer.
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"HEAD", "/late-body/200"}, {"GET", "/late-body/204"}, {"GET", "/late-body/304"}}) {
    INFO(method << " " << path);
    const auto bodyless = response_of(h.run(OutboundRequest{method, path, {}, {}}));
    CHECK(bodyless.body.empty());
    CHECK(values_of(bodyless, "content-length").empty());
    const auto next = response_of(h.run(get("/echo")));
    CHECK(next.body.starts_with("GET /echo\n"));
  }
  // An answer that ends where its framing says keeps its connection.
  const std::uint64_t before = h.allowed.connections();
  CHECK(response_of(h.run(get("/echo"))).status == 200);
  CHECK(response_of(h.run(get("/chunked"))).body == "hello chunked world");
  CHECK(h.allowed.connections() == before);
}

TEST_CASE("bytes arriving on an idle connection retire it, even before the pool has noticed",
          "[gateway][hostile]") {
  Harness h;
  CHECK(response_of(h.run(get("/then-junk"))).body == "first");
  // The server marks the connection held just after it sent "first", which a busy machine may
  // run after this thread has the answer.
  REQUIRE(h.allowed.wait_held(1, 20s));
  // The unrequested bytes arrive while the I/O thread is busy, so the pool's watcher cannot have
  // run when the next request takes the connection: the pool has to look for itself.
  auto promise = std::make_shared<std::promise<FetchResult>>();
  auto future = promise->get_future();
  std::size_t released = 0;
  boost::asio::post(h.io.io(), [&h, &released, promise] {
    released = h.allowed.release_held();  // returns once the bytes wait in our socket
    h.gateway->fetch(get("/echo"), h.budget, Clock::now() + 5s,
                     [promise](FetchResult result) { promise->set_value(std::move(result)); });
  });
  REQUIRE(future.wait_for(20s) == std::future_status::ready);
  CHECK(released == 1);
  const auto next = response_of(future.get());
  CHECK(next.body.starts_with("GET /echo\n"));
  CHECK(h.allowed.connections() == 2);
}

TEST_CASE("a credential reflected into the final URL is redacted", "[gateway][hostile]") {
  Harness h;
  // 302 to /echo/landed?auth=<Authorization, every byte percent-encoded>, followed.
  const auto landed = response_of(h.run(get("/reflect-location")));
  CHECK(landed.redirects == 1);
  CHECK(landed.final_url == h.allowed.origin() + "/echo/landed?auth=[redacted]");
  CHECK(landed.body.starts_with("GET /echo/landed?auth=[redacted]\n"));
  CHECK(landed.body.find("%72%65%61%6C") == std::string::npos);  // "real", encoded
}

TEST_CASE("a credential reflected into the reason phrase or a header name is redacted",
          "[gateway][hostile]") {
  Harness h;
  const auto reason = response_of(h.run(get("/reason")));
  CHECK(reason.status == 200);
  CHECK(reason.status_text == "[redacted]");
  const auto named = response_of(h.run(get("/header-name")));
  for (const auto& [name, value] : named.headers)
    CHECK(name.find(kSecretWord) == std::string::npos);
  CHECK(values_of(named, "x-redacted-seen") == std::vector<std::string>{"1"});
}

TEST_CASE("a credential an upstream JSON-escaped is redacted too", "[gateway][hostile]") {
  Harness h({}, "Bearer abc/def+ghi=0123456789");
  const auto echoed = response_of(h.run(get("/json-escaped")));
  CHECK(echoed.body == R"({"lower":"[redacted]","upper":"[redacted]","mixed":"[redacted]"})");
}

TEST_CASE("Content-Length is computed after redaction", "[gateway][hostile]") {
  Harness h;
  const auto echo = response_of(h.run(get("/echo")));
  REQUIRE(echo.body.find("Authorization: [redacted]\n") != std::string::npos);
  CHECK(values_of(echo, "content-length") ==
        std::vector<std::string>{std::to_string(echo.body.size())});
  // A HEAD answer has no body: no Content-Length, not even the upstream's, which would give away
  // the length of what was redacted from the GET.
  const auto head = response_of(h.run(OutboundRequest{"HEAD", "/echo", {}, {}}));
  CHECK(values_of(head, "content-length").empty());
}

TEST_CASE("stacked content codings are all undone before redaction, unknown ones refused",
          "[gateway][hostile]") {
  Harness h;
  const std::string origin = h.allowed.origin();
  // Content-Encoding: identity, then Content-Encoding: gzip, gzip.
  const auto stacked = response_of(h.run(get("/stacked-encoding")));
  CHECK(stacked.body == "auth=[redacted]");
  CHECK(values_of(stacked, "content-encoding").empty());
  CHECK(error_of(h.run(get("/stacked-unknown"))) ==
        "runtime: response from " + origin +
            " has an unsupported Content-Encoding (only gzip and deflate are decoded)");
  CHECK(error_of(h.run(get("/transfer-gzip"))) ==
        "runtime: response from " + origin +
            " has an unsupported Transfer-Encoding (only chunked is read)");
}

TEST_CASE("method and path override headers are dropped when a policy restricts methods",
          "[gateway][policy]") {
  IoThread io;
  TestServer server;
  const Headers overrides = {{"X-HTTP-Method-Override", "DELETE"}, {"x-http-method", "DELETE"},
                             {"X-Method-Override", "DELETE"},      {"X-Original-URL", "/admin"},
                             {"X-Rewrite-URL", "/admin"},          {"X-Keep", "1"}};
  const auto sent_overrides = [&](Gateway& gateway) {
    CallBudget budget(1);
    const auto echo = response_of(fetch(gateway, budget, get("/echo", overrides)));
    CHECK(echo.body.find("X-Keep: 1\n") != std::string::npos);
    std::size_t n = 0;
    for (const char* name : {"X-HTTP-Method-Override:", "x-http-method:", "X-Method-Override:",
                             "X-Original-URL:", "X-Rewrite-URL:"}) {
      n += count(echo.body, name);
    }
    return n;
  };
  OperationPolicyOptions read_only;
  read_only.methods = {Method::get, Method::head};
  OperationPolicyOptions spec_only;
  spec_only.operations = std::vector<Operation>{{Method::get, "/echo", {}}};
  auto restricted_methods = make_gateway(io, {Upstream{server.origin(), {}}}, {}, read_only);
  auto restricted_operations = make_gateway(io, {Upstream{server.origin(), {}}}, {}, spec_only);
  auto open = make_gateway(io, {Upstream{server.origin(), {}}});
  CHECK(sent_overrides(*restricted_methods) == 0);
  CHECK(sent_overrides(*restricted_operations) == 0);
  CHECK(sent_overrides(*open) == 5);  // nothing to walk around: they pass as any header does
}

namespace {

// An Approver whose answers the test gives; it records every question and withdrawal.
class TestApprover final : public Approver {
 public:
  struct Asked {
    std::uint64_t ticket;
    ApprovalRequest request;
    std::function<void(ApprovalAnswer)> answer;
  };
  void ask(std::uint64_t ticket, const ApprovalRequest& request,
           std::function<void(ApprovalAnswer)> answer) override {
    {
      std::lock_guard lock(mutex);
      asked.push_back({ticket, request, std::move(answer)});
      if (reply) asked.back().answer({*reply, "alice via test"});
    }
    questions.notify_all();
  }
  // Waits until `n` questions were asked, at most 20 s; false if they were not.
  bool wait_for_questions(std::size_t n) {
    std::unique_lock lock(mutex);
    return questions.wait_for(lock, 20s, [&] { return asked.size() >= n; });
  }
  void withdraw(std::uint64_t ticket) override {
    std::lock_guard lock(mutex);
    withdrawn.push_back(ticket);
  }
  std::mutex mutex;
  std::condition_variable questions;  // one more was asked
  std::optional<Verdict> reply;       // answered at once; unset: never
  std::vector<Asked> asked;
  std::vector<std::uint64_t> withdrawn;
};

GatewayOptions approval_options(const std::string& origin, std::chrono::milliseconds timeout) {
  GatewayOptions options;
  options.upstreams = {Upstream{origin, {}}};
  options.request_body_bytes = 1000;
  ApprovalSettings approval;
  approval.rules.methods = {Method::post, Method::del};
  approval.timeout = timeout;
  options.approval = approval;
  return options;
}

}  // namespace

TEST_CASE("a request that needs approval leaves only after an accept", "[gateway][approval]") {
  IoThread io;
  TestServer server;
  auto gateway = make_gateway(io, approval_options(server.origin(), 5000ms));
  auto approver = std::make_shared<TestApprover>();
  Caller caller{"alice", std::nullopt, {}, approver};
  CallBudget budget(10);
  std::vector<bool> waits;
  const auto send = [&](OutboundRequest request, std::chrono::milliseconds timeout) {
    auto promise = std::make_shared<std::promise<FetchResult>>();
    auto future = promise->get_future();
    gateway->fetch(
        std::move(request), budget, Clock::now() + timeout,
        [promise](FetchResult result) { promise->set_value(std::move(result)); }, caller,
        [&waits](bool waiting) { waits.push_back(waiting); });
    REQUIRE(future.wait_for(20s) == std::future_status::ready);
    return future.get();
  };
  const OutboundRequest post{"POST", "/echo?x=1", {{"Content-Type", "application/json"}}, "{}"};

  approver->reply = Verdict::accepted;
  const InboundResponse sent = response_of(send(post, 5000ms));
  CHECK(sent.approved_by == "alice via test");
  REQUIRE(approver->asked.size() == 1);
  const ApprovalRequest& asked = approver->asked[0].request;
  CHECK(asked.method == "POST");
  CHECK(asked.url == server.origin() + "/echo?x=1");
  CHECK(asked.body == "{}");
  CHECK(asked.content_type == "application/json");
  CHECK(asked.headers == Headers{{"Content-Type", "application/json"}});
  CHECK(asked.digest ==
        approval_digest("POST", server.origin() + "/echo?x=1", asked.headers, "{}"));
  CHECK(waits == std::vector<bool>{true, false});
  CHECK(server.requests() == 1);

  approver->reply = Verdict::declined;
  CHECK(outcome_of(send(post, 5000ms)) ==
        "policy: the user declined it: POST " + server.origin() + "/echo?x=1");
  approver->reply = Verdict::cancelled;
  CHECK(outcome_of(send(post, 5000ms))
            .starts_with("policy: the user dismissed the question without approving it: POST"));
  CHECK(server.requests() == 1);  // neither left

  // Reads never ask.
  CHECK(outcome_of(send(get("/echo"), 5000ms)) == "200");
  CHECK(approver->asked.size() == 3);

  // A slow yes: the wait is not the request's time, so a deadline shorter than the wait holds.
  approver->reply.reset();
  auto promise = std::make_shared<std::promise<FetchResult>>();
  auto future = promise->get_future();
  const Deadline deadline = Clock::now() + 300ms;
  gateway->fetch(
      post, budget, deadline,
      [promise](FetchResult result) { promise->set_value(std::move(result)); }, caller);
  REQUIRE(approver->wait_for_questions(4));
  // The person answers after the request's own deadline has passed: that time is the subject
  // here, and the gateway's clock is the system's steady one.
  std::this_thread::sleep_until(deadline + 200ms);
  {
    std::lock_guard lock(approver->mutex);
    REQUIRE(approver->asked.size() == 4);
    approver->asked.back().answer({Verdict::accepted, "alice"});
    approver->asked.back().answer({Verdict::declined, "alice"});  // a second answer is ignored
  }
  REQUIRE(future.wait_for(20s) == std::future_status::ready);
  CHECK(outcome_of(future.get()) == "200");
  CHECK(server.requests() == 3);
}

TEST_CASE("an unanswered question times out and is withdrawn, and without an approver fails closed",
          "[gateway][approval]") {
  IoThread io;
  TestServer server;
  auto gateway = make_gateway(io, approval_options(server.origin(), 200ms));
  auto approver = std::make_shared<TestApprover>();
  CallBudget budget(10);
  const OutboundRequest del{"DELETE", "/echo", {}, ""};
  CHECK(
      outcome_of(fetch(*gateway, budget, del, 5000ms, Caller{"bob", std::nullopt, {}, approver})) ==
      "policy: no answer from the user within 200 ms: DELETE " + server.origin() + "/echo");
  {
    std::lock_guard lock(approver->mutex);
    REQUIRE(approver->asked.size() == 1);
    CHECK(approver->withdrawn == std::vector<std::uint64_t>{approver->asked[0].ticket});
    approver->asked[0].answer({Verdict::accepted, "bob"});  // too late: nothing is sent
  }
  CHECK(outcome_of(fetch(*gateway, budget, del, 5000ms, Caller{"carol"})) ==
        "policy: approval required, but this client cannot ask its user: DELETE " +
            server.origin() + "/echo");
  CHECK(budget.used() == 1);  // the refusal without an approver spent nothing
  CHECK(outcome_of(fetch(*gateway, budget, get("/echo"), 5000ms, Caller{"carol"})) == "200");
  CHECK(server.requests() == 1);
}

TEST_CASE("a request aborted while its question waits is withdrawn and never sent",
          "[gateway][approval][abort]") {
  IoThread io;
  TestServer server;
  auto gateway = make_gateway(io, approval_options(server.origin(), 20000ms));
  auto approver = std::make_shared<TestApprover>();
  CallBudget budget(10);
  auto abort = std::make_shared<FetchAbort>();
  auto promise = std::make_shared<std::promise<FetchResult>>();
  auto future = promise->get_future();
  auto asked = std::make_shared<std::promise<void>>();
  std::vector<bool> waits;
  gateway->fetch(
      OutboundRequest{"DELETE", "/echo", {}, ""}, budget, Clock::now() + 5000ms,
      [promise](FetchResult result) { promise->set_value(std::move(result)); },
      Caller{"dave", std::nullopt, {}, approver},
      [asked, &waits](bool waiting) {
        waits.push_back(waiting);
        if (waiting) asked->set_value();
      },
      abort);
  REQUIRE(asked->get_future().wait_for(20s) == std::future_status::ready);
  abort->abort();
  REQUIRE(future.wait_for(20s) == std::future_status::ready);
  CHECK(outcome_of(future.get()) ==
        "runtime: request to " + server.origin() + " aborted before it was sent");
  {
    std::lock_guard lock(approver->mutex);
    REQUIRE(approver->asked.size() == 1);
    CHECK(approver->withdrawn == std::vector<std::uint64_t>{approver->asked[0].ticket});
    approver->asked[0].answer({Verdict::accepted, "dave"});  // too late: nothing is sent
  }
  CHECK(waits == std::vector<bool>{true, false});
  // Its place among the principal's open questions is free again, and nothing left.
  CHECK(outcome_of(fetch(*gateway, budget, get("/echo"), 5000ms,
                         Caller{"dave", std::nullopt, {}, approver})) == "200");
  CHECK(server.requests() == 1);
}

TEST_CASE("approval rules are not walked around by override headers, redirects or spellings",
          "[gateway][approval]") {
  IoThread io;
  TestServer server;
  server.add_redirect("/moved", 307, "/echo/guarded/1");
  server.add_redirect("/moved-free", 307, "/echo/free/2");
  GatewayOptions options = approval_options(server.origin(), 5000ms);
  options.approval->rules.paths = {"/echo/guarded/**"};
  auto gateway = make_gateway(io, std::move(options));
  auto approver = std::make_shared<TestApprover>();
  approver->reply = Verdict::declined;
  const Caller caller{"alice", std::nullopt, {}, approver};
  CallBudget budget(20);
  const auto post = [](std::string url, Headers headers = {}) {
    return OutboundRequest{"POST", std::move(url), std::move(headers), "{}"};
  };

  // A POST nobody is asked about cannot ask the upstream to run it as a DELETE.
  const auto echo = response_of(fetch(*gateway, budget,
                                      post("/echo/free", {{"X-HTTP-Method-Override", "DELETE"},
                                                          {"X-Original-URL", "/echo/guarded/1"},
                                                          {"X-Keep", "1"}}),
                                      5000ms, caller));
  CHECK(echo.body.find("X-Keep: 1\n") != std::string::npos);
  CHECK(echo.body.find("Override") == std::string::npos);
  CHECK(echo.body.find("X-Original-URL") == std::string::npos);

  // A redirect to a request that needs a yes is not followed: the code gets the 307.
  CHECK(outcome_of(fetch(*gateway, budget, post("/moved"), 5000ms, caller)) == "307");
  // One to a request that needs none still is.
  CHECK(outcome_of(fetch(*gateway, budget, post("/moved-free"), 5000ms, caller)) == "200");
  CHECK(approver->asked.empty());

  // Spellings a loosely routing server takes for a guarded path are asked about.
  for (const char* spelling : {"/echo/guarded/1/", "/ECHO/Guarded/1", "/echo//guarded/1"}) {
    CAPTURE(spelling);
    CHECK(outcome_of(fetch(*gateway, budget, post(spelling), 5000ms, caller))
              .starts_with("policy: the user declined it: POST"));
  }
  CHECK(approver->asked.size() == 3);
  CHECK(server.requests() == 4);  // the free POST, /moved, /moved-free and where it went
}

// ---------------------------------------------------------------------------------------------
// Issue 34: one matcher for operations, scopes and approvals; every request a redirect makes is
// checked again; what one principal or call can hold is bounded.

namespace {

// MarketHub-like operations with the scopes their security names; /orders/{orderId} is declared
// before the concrete /orders/purge, as a description may list them.
std::vector<Operation> scoped_orders() {
  return {{Method::get, "/orders", {{"orders:read"}}, "listOrders", "", {"Orders"}},
          {Method::post, "/orders", {{"orders:write"}}, "createOrder", "", {"Orders"}},
          {Method::post, "/orders/{orderId}", {{"orders:write"}}, "updateOrder", "", {"Orders"}},
          {Method::post, "/orders/purge", {{"admin"}}, "purgeOrders", "", {"Danger"}},
          {Method::get, "/go", {}, "go", "", {}},
          {Method::get, "/echo/secret", {{"admin"}}, "readSecret", "", {}}};
}

std::unique_ptr<Gateway> scoped_gateway(IoThread& io, const TestServer& server) {
  GatewayOptions options;
  options.upstreams = {Upstream{server.origin(), {}}};
  OperationPolicyOptions declared;
  declared.operations = scoped_orders();
  options.request_scopes.operations = declared;
  return make_gateway(io, std::move(options));
}

OutboundRequest post_json(std::string url) {
  return OutboundRequest{"POST", std::move(url), {{"Content-Type", "application/json"}}, "{}"};
}

}  // namespace

TEST_CASE("a scope is not walked around by the spelling of a path", "[gateway][scopes]") {
  IoThread io;
  TestServer server;
  const auto gateway = scoped_gateway(io, server);
  CallBudget budget(100);
  const Caller reader{"sub:alice", std::vector<std::string>{"orders:read"}, ""};
  const std::string needs_write =
      "policy: POST /orders needs scope orders:write (the API description's security), which the "
      "caller's access token lacks";
  // Spellings case-insensitive, slash-merging, ;param-cutting and format-suffix routers
  // (Spring, Tomcat, Rails, Express with its defaults) all send to POST /orders.
  for (const char* spelling : {"/Orders", "/orders/", "/orders//", "/ORDERS//", "/orders;x=1",
                               "/orders;jsessionid=1/", "/orders.json", "/Orders.JSON?x=1"}) {
    CAPTURE(spelling);
    CHECK(outcome_of(fetch(*gateway, budget, post_json(spelling), 5s, reader)) == needs_write);
  }
  // A write that matches no declared operation may be any of them upstream: it needs every
  // scope a declared write names.
  CHECK(outcome_of(fetch(*gateway, budget, post_json("/orders/o-1/notes"), 5s, reader)) ==
        "policy: POST /orders/o-1/notes matches no operation in the API description, so it needs "
        "every scope the description's writes name; the caller's access token lacks orders:write "
        "admin");
  CHECK(server.requests() == 0);
  const Caller writer{"sub:bob", std::vector<std::string>{"orders:read", "orders:write"}, ""};
  CHECK(outcome_of(fetch(*gateway, budget, post_json("/orders;x=1"), 5s, writer)) == "404");
  // Reads that match nothing need only their method's scopes, as before.
  CHECK(outcome_of(fetch(*gateway, budget, get("/echo/free"), 5s, reader)) == "200");
}

TEST_CASE("a concrete path matches before a template declared ahead of it",
          "[gateway][scopes][operations]") {
  IoThread io;
  TestServer server;
  const auto gateway = scoped_gateway(io, server);
  CallBudget budget(100);
  const Caller writer{"sub:bob", std::vector<std::string>{"orders:read", "orders:write"}, ""};
  CHECK(outcome_of(fetch(*gateway, budget, post_json("/orders/purge"), 5s, writer)) ==
        "policy: POST /orders/purge needs scope admin (the API description's security), which "
        "the caller's access token lacks");
  CHECK(outcome_of(fetch(*gateway, budget, post_json("/Orders/Purge.json"), 5s, writer))
            .starts_with("policy: POST /orders/purge needs scope admin"));
  CHECK(server.requests() == 0);
  CHECK(outcome_of(fetch(*gateway, budget, post_json("/orders/o-1"), 5s, writer)) == "404");
}

TEST_CASE("every request a redirect makes needs the caller's scopes too", "[gateway][scopes]") {
  IoThread io;
  TestServer server;
  server.add_redirect("/go", 302, "/echo/secret");
  const auto gateway = scoped_gateway(io, server);
  CallBudget budget(100);
  const Caller reader{"sub:alice", std::vector<std::string>{"orders:read"}, ""};
  // /echo/secret needs admin: the redirect is not followed, and the code gets the 302.
  const auto moved = response_of(fetch(*gateway, budget, get("/go?to=/secret"), 5s, reader));
  CHECK(moved.status == 302);
  CHECK(moved.redirects == 0);
  CHECK(server.requests() == 1);
  CHECK(outcome_of(fetch(*gateway, budget, get("/echo/secret"), 5s, reader))
            .starts_with("policy: GET /echo/secret needs scope admin"));
  const Caller admin{"sub:root", std::vector<std::string>{"admin"}, ""};
  const auto followed = response_of(fetch(*gateway, budget, get("/go"), 5s, admin));
  CHECK(followed.status == 200);
  CHECK(followed.final_url == server.origin() + "/echo/secret");
  CHECK(server.requests() == 3);
}

TEST_CASE("approval rules are not walked around by path parameters, format suffixes or templates",
          "[gateway][approval]") {
  IoThread io;
  TestServer server;
  GatewayOptions options = approval_options(server.origin(), 5000ms);
  options.approval->rules.operations = {"createOrder", "purgeOrders"};
  options.approval->operations.operations = scoped_orders();
  auto gateway = make_gateway(io, std::move(options));
  auto approver = std::make_shared<TestApprover>();
  approver->reply = Verdict::declined;
  const Caller caller{"alice", std::nullopt, {}, approver};
  CallBudget budget(100);
  for (const char* spelling : {"/orders;x=1", "/orders.json", "/Orders/", "/orders;a=b//",
                               "/orders/purge", "/ORDERS/purge.xml",
                               // no declared operation: it may be any of them upstream
                               "/orders/o-1/notes"}) {
    CAPTURE(spelling);
    CHECK(outcome_of(fetch(*gateway, budget, post_json(spelling), 5000ms, caller))
              .starts_with("policy: the user declined it: POST"));
  }
  CHECK(approver->asked.size() == 7);
  CHECK(approver->asked[4].request.operation_id == "purgeOrders");
  // updateOrder is not in the rules.
  CHECK(outcome_of(fetch(*gateway, budget, post_json("/orders/o-1"), 5000ms, caller)) == "404");
  CHECK(approver->asked.size() == 7);
  CHECK(server.requests() == 1);
}

TEST_CASE("approving GET covers HEAD", "[gateway][approval]") {
  IoThread io;
  TestServer server;
  GatewayOptions options = approval_options(server.origin(), 5000ms);
  options.approval->rules.methods = {Method::get};
  options.approval->rules.paths = {"/echo/private/**"};
  auto gateway = make_gateway(io, std::move(options));
  auto approver = std::make_shared<TestApprover>();
  approver->reply = Verdict::declined;
  CallBudget budget(10);
  CHECK(outcome_of(fetch(*gateway, budget, OutboundRequest{"HEAD", "/echo/private/1", {}, {}},
                         5000ms, Caller{"alice", std::nullopt, {}, approver})) ==
        "policy: the user declined it: HEAD " + server.origin() + "/echo/private/1");
  CHECK(server.requests() == 0);
}

TEST_CASE("a principal's open questions are bounded, and each holds its body once",
          "[gateway][approval]") {
  IoThread io;
  TestServer server;
  auto gateway = make_gateway(io, approval_options(server.origin(), 10000ms));
  auto approver = std::make_shared<TestApprover>();  // answers only when the test says so
  const Caller alice{"alice", std::nullopt, {}, approver};
  const Caller bob{"bob", std::nullopt, {}, approver};
  CallBudget budget(100);
  std::vector<std::future<FetchResult>> waiting;
  const auto start = [&](const Caller& caller, std::string body) {
    auto promise = std::make_shared<std::promise<FetchResult>>();
    waiting.push_back(promise->get_future());
    gateway->fetch(
        OutboundRequest{"POST", "/echo", {{"Content-Type", "text/plain"}}, std::move(body)}, budget,
        Clock::now() + 5s, [promise](FetchResult result) { promise->set_value(std::move(result)); },
        caller);
  };
  const auto wait_for_questions = [&](std::size_t n) { REQUIRE(approver->wait_for_questions(n)); };
  for (int i = 0; i < 16; ++i) start(alice, "body " + std::to_string(i));
  wait_for_questions(16);
  CHECK(outcome_of(fetch(*gateway, budget, post_json("/echo"), 5s, alice)) ==
        "policy: approval required, and 16 questions already wait for this principal's answer, "
        "the most that may wait at once: POST " +
            server.origin() + "/echo");
  // Another principal still asks.
  start(bob, "bob's");
  wait_for_questions(17);
  // An answered question frees its place; the accepted request leaves with its body.
  {
    std::lock_guard lock(approver->mutex);
    approver->asked[0].answer({Verdict::accepted, "alice"});
  }
  REQUIRE(waiting[0].wait_for(20s) == std::future_status::ready);
  CHECK(response_of(waiting[0].get()).body.ends_with("\n\nbody 0"));
  start(alice, "body 16");
  wait_for_questions(18);
  {
    std::lock_guard lock(approver->mutex);
    for (std::size_t i = 1; i < approver->asked.size(); ++i) {
      approver->asked[i].answer({Verdict::declined, "alice"});
    }
  }
  for (std::size_t i = 1; i < waiting.size(); ++i) {
    REQUIRE(waiting[i].wait_for(20s) == std::future_status::ready);
    CHECK(outcome_of(waiting[i].get()).starts_with("policy: the user declined it: POST"));
  }
  CHECK(server.requests() == 1);
}

TEST_CASE("a call's refused requests are bounded: past 100, every fetch is refused unchecked",
          "[gateway][budget]") {
  IoThread io;
  TestServer server;
  auto gateway = make_gateway(io, {Upstream{server.origin(), {}}});
  CallBudget budget(10);
  for (int i = 0; i < 100; ++i) {
    REQUIRE(error_of(fetch(*gateway, budget, get("http://evil.test/"))) ==
            "policy: origin http://evil.test is not allowed");
  }
  const std::string limit =
      "policy: subrequest limit reached: this call had 100 requests refused, the most a call may "
      "have; it sends no more";
  // The first refusal past the bound is recorded (by the audit trail); it stands for the rest.
  const FetchResult first = fetch(*gateway, budget, get("http://evil.test/"));
  const FetchResult second = fetch(*gateway, budget, get("/echo"));
  CHECK(error_of(first) == limit);
  CHECK(error_of(second) == limit);
  CHECK_FALSE(std::get<GatewayError>(first).repeated);
  CHECK(std::get<GatewayError>(second).repeated);
  CHECK(server.requests() == 0);
  CHECK(budget.used() == 0);
  CallBudget next_call(10);
  CHECK(response_of(fetch(*gateway, next_call, get("/echo"))).status == 200);
}

TEST_CASE("an exchanged token is reused for the same subject token only", "[gateway][exchange]") {
  IoThread io;
  TestServer upstream;
  GatewayOptions options;
  Upstream exchanging{upstream.origin(), {}};
  exchanging.token_exchange = codemode::config::TokenExchange{"orders", "", {}, "mcp", "s", ""};
  options.upstreams = {exchanging};
  // A cache like auth::TokenExchanger's: by the key the gateway names.
  std::mutex mutex;
  std::map<std::string, std::string> cache;
  std::vector<std::string> handed;  // the exchanged token each request got
  std::vector<std::string> keys;
  options.exchange_token = [&](const codemode::config::TokenExchange&, const std::string& key,
                               const CallerAccessToken& token, ExchangeDone done) {
    std::string value;
    {
      std::lock_guard lock(mutex);
      keys.push_back(key);
      auto [it, fresh] = cache.emplace(key, "downstream-for-" + token.value);
      value = it->second;
      handed.push_back(value);
    }
    done(ExchangedToken{value});
  };
  const auto gateway = make_gateway(io, std::move(options));
  CallBudget budget(100);
  const auto alice_with = [](std::string token) {
    Caller who{"sub:alice", std::nullopt, ""};
    who.access_token =
        std::make_shared<const CallerAccessToken>(CallerAccessToken{std::move(token), 0});
    return who;
  };
  // Alice's admin console token, then her plugin's low-scope token, then the admin one again.
  for (const char* token :
       {"alice-admin-console-token", "alice-plugin-token", "alice-admin-console-token"}) {
    CHECK(outcome_of(fetch(*gateway, budget, get("/echo"), 5s, alice_with(token))) == "200");
  }
  std::lock_guard lock(mutex);
  CHECK(handed == std::vector<std::string>{"downstream-for-alice-admin-console-token",
                                           "downstream-for-alice-plugin-token",
                                           "downstream-for-alice-admin-console-token"});
  CHECK(cache.size() == 2);
  for (const auto& key : keys) {
    CHECK(key.find("alice-") == std::string::npos);  // a hash names the token, never the token
    CHECK(key.ends_with(" " + upstream.origin()));
  }
}

TEST_CASE("a query credential is sent, and the code can neither read nor replace it",
          "[gateway][credentials][query]") {
  IoThread io;
  TestServer keyed;
  TestServer other;  // listed, but without the query credential
  Upstream with_key{keyed.origin(), {}};
  with_key.query = {{"api_key", "qsecret-4f9a2c"}, {"sig", "a b&c=d"}};
  auto gateway = make_gateway(io, {with_key, Upstream{other.origin(), {}}});
  CallBudget budget{100};
  const auto run = [&](OutboundRequest request) {
    return fetch(*gateway, budget, std::move(request));
  };

  // Sent once, after the code's parameters; one of the same name the code set is dropped, in any
  // spelling a server decodes to that name. The echo shows it redacted, encoded or not.
  const auto echo = response_of(run(get("/echo?x=1&api_key=mine&api%5Fkey=mine2&sig=x&y")));
  CHECK(echo.body.starts_with("GET /echo?x=1&y&api_key=[redacted]&sig=[redacted]\n"));
  CHECK(echo.body.find("mine") == std::string::npos);
  CHECK(echo.body.find("qsecret") == std::string::npos);
  CHECK(echo.final_url == keyed.origin() + "/echo?x=1&api_key=mine&api%5Fkey=mine2&sig=x&y");
  CHECK(response_of(run(get("/echo"))).final_url == keyed.origin() + "/echo");
  CHECK(response_of(run(get("/echo")))
            .body.starts_with("GET /echo?api_key=[redacted]&sig=[redacted]\n"));

  // A same-origin redirect that reflects the key into the Location: followed, the key sent once
  // again, and neither the final URL nor the Location header shows it.
  keyed.add_redirect("/hop", 302, "/echo/landed?api_key=qsecret-4f9a2c&k=1");
  const auto hopped = response_of(run(get("/hop")));
  CHECK(hopped.redirects == 1);
  CHECK(hopped.body.starts_with("GET /echo/landed?k=1&api_key=[redacted]&sig=[redacted]\n"));
  CHECK(hopped.final_url == keyed.origin() + "/echo/landed?api_key=[redacted]&k=1");
  // A redirect to another listed origin is not followed, so the key never goes there; the
  // Location the code gets is redacted too.
  keyed.add_redirect("/away", 307, other.origin() + "/echo?api_key=qsecret-4f9a2c");
  const auto away = response_of(run(get("/away")));
  CHECK(away.status == 307);
  CHECK(values_of(away, "location") ==
        std::vector<std::string>{other.origin() + "/echo?api_key=[redacted]"});
  CHECK(other.requests() == 0);
  // Requests to the other upstream carry none of it.
  const auto plain = response_of(run(get(other.origin() + "/echo?q=1")));
  CHECK(plain.body.starts_with("GET /echo?q=1\n"));
}

TEST_CASE("HTTP Basic from config is a credential header like any other",
          "[gateway][credentials][basic]") {
  IoThread io;
  TestServer server;
  Upstream basic{server.origin(), {{"Authorization", "Basic dXNlcjpwYXNzLXdvcmQtOTk="}}};
  basic.withheld = {"user:pass-word-99", "pass-word-99"};
  auto gateway = make_gateway(io, {basic});
  CallBudget budget{10};
  const auto echo = response_of(fetch(
      *gateway, budget,
      OutboundRequest{"POST", "/echo", {{"Authorization", "Basic ZmFrZQ=="}}, "pass-word-99"}));
  CHECK(echo.body.find("Authorization: [redacted]\n") != std::string::npos);
  CHECK(echo.body.find("ZmFrZQ") == std::string::npos);
  CHECK(echo.body.find("pass-word-99") == std::string::npos);  // an echo of it, decoded
}
