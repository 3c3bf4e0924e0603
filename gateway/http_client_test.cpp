// The HTTP client against real loopback servers: keep-alive, TLS, deadlines, caps, encodings
// and every way an upstream can misbehave, each ending in a response or a clear runtime error.
#include "gateway/http_client.h"

#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>
#include <future>
#include <memory>
#include <string>

#include "gateway/test_server.h"
#include "gateway/test_tls.h"

namespace {

using namespace codemode::gateway;
using namespace std::chrono_literals;
using testing::IoThread;
using testing::TempFile;
using testing::TestServer;

std::unique_ptr<HttpClient> make_client(IoThread& io, ClientOptions options = {}) {
  auto created = HttpClient::create(io.io(), std::move(options));
  REQUIRE(std::holds_alternative<std::unique_ptr<HttpClient>>(created));
  return std::move(std::get<std::unique_ptr<HttpClient>>(created));
}

struct Send {
  Method method = Method::get;
  Headers headers = {};
  std::string body = {};
  std::chrono::milliseconds timeout = 5000ms;
};

ClientResult send(HttpClient& client, const std::string& url, Send options = {}) {
  const UrlResult normalised = normalise_url(url, "");
  REQUIRE(std::holds_alternative<NormalisedUrl>(normalised));
  auto promise = std::make_shared<std::promise<ClientResult>>();
  auto future = promise->get_future();
  client.send(ClientRequest{options.method, std::get<NormalisedUrl>(normalised),
                            std::move(options.headers), std::move(options.body)},
              Clock::now() + options.timeout,
              [promise](ClientResult result) { promise->set_value(std::move(result)); });
  REQUIRE(future.wait_for(20s) == std::future_status::ready);  // a hang fails, not blocks
  return future.get();
}

InboundResponse response_of(ClientResult result) {
  if (auto* error = std::get_if<GatewayError>(&result)) FAIL("unexpected error: " << error->text());
  return std::get<InboundResponse>(std::move(result));
}

std::string error_of(ClientResult result) {
  if (auto* response = std::get_if<InboundResponse>(&result)) {
    FAIL("unexpected response: " << response->status);
  }
  const auto& error = std::get<GatewayError>(result);
  CHECK(error.kind == ErrorKind::runtime);
  return error.message;
}

std::uint16_t unused_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor(
      io, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();
}

}  // namespace

TEST_CASE("requests carry Host, framing and the given headers", "[gateway][client]") {
  IoThread io;
  TestServer server;
  auto client = make_client(io);
  const auto get =
      response_of(send(*client, server.origin() + "/echo?x=1", {.headers = {{"X-Custom", "yes"}}}));
  CHECK(get.status == 200);
  CHECK(get.status_text == "OK");
  CHECK(get.final_url == server.origin() + "/echo?x=1");
  CHECK(get.body.starts_with("GET /echo?x=1\n"));
  CHECK(get.body.find("Host: 127.0.0.1:" + std::to_string(server.port()) + "\n") !=
        std::string::npos);
  CHECK(get.body.find("X-Custom: yes\n") != std::string::npos);
  CHECK(get.body.find("User-Agent: codemode-mcp\n") != std::string::npos);
  CHECK(get.body.find("Accept-Encoding: gzip, deflate\n") != std::string::npos);

  const auto post = response_of(
      send(*client, server.origin() + "/echo", {.method = Method::post, .body = "hello"}));
  CHECK(post.body.starts_with("POST /echo\n"));
  CHECK(post.body.find("Content-Length: 5\n") != std::string::npos);
  CHECK(post.body.ends_with("\n\nhello"));
}

TEST_CASE("keep-alive: two requests, one connection", "[gateway][client]") {
  IoThread io;
  TestServer server;
  auto client = make_client(io);
  CHECK(response_of(send(*client, server.origin() + "/echo/1")).status == 200);
  CHECK(response_of(send(*client, server.origin() + "/echo/2")).status == 200);
  CHECK(server.connections() == 1);
  CHECK(server.requests() == 2);
  CHECK(client->connections_opened() == 1);

  // Connection: close is honoured; a connection the server drops while idle is not reused.
  CHECK(response_of(send(*client, server.origin() + "/close")).body == "bye");
  CHECK(response_of(send(*client, server.origin() + "/close-silently")).status == 200);
  CHECK(response_of(send(*client, server.origin() + "/echo/3")).status == 200);
  CHECK(server.connections() == 3);
  CHECK(server.requests() == 5);
}

TEST_CASE("upstream status codes are responses, not errors", "[gateway][client]") {
  IoThread io;
  TestServer server;
  auto client = make_client(io);
  const auto failed = response_of(send(*client, server.origin() + "/status/500"));
  CHECK(failed.status == 500);
  CHECK(failed.body == "status 500");
  CHECK(response_of(send(*client, server.origin() + "/nowhere")).status == 404);
  const auto head =
      response_of(send(*client, server.origin() + "/big/100", {.method = Method::head}));
  CHECK(head.status == 200);
  CHECK(head.body.empty());
}

TEST_CASE("an upstream that is down, resets, stalls or lies is a runtime error",
          "[gateway][client]") {
  IoThread io;
  TestServer server;
  auto client = make_client(io);
  const std::string origin = server.origin();

  const std::uint16_t port = unused_port();
  CHECK(error_of(send(*client, "http://127.0.0.1:" + std::to_string(port) + "/")) ==
        "cannot connect to http://127.0.0.1:" + std::to_string(port) + " (Connection refused)");
  CHECK(error_of(send(*client, origin + "/reset"))
            .starts_with("connection to " + origin + " closed before a complete response"));
  CHECK(error_of(send(*client, origin + "/truncated"))
            .starts_with("connection to " + origin + " closed before a complete response"));
  CHECK(error_of(send(*client, origin + "/malformed"))
            .starts_with("malformed HTTP response from " + origin + " ("));

  const auto started = Clock::now();
  CHECK(error_of(send(*client, origin + "/slow", {.timeout = 200ms})) ==
        "request to " + origin + " timed out");
  CHECK(error_of(send(*client, origin + "/stall", {.timeout = 200ms})) ==
        "request to " + origin + " timed out");
  CHECK(Clock::now() - started < 3s);
  CHECK(error_of(send(*client, origin + "/echo", {.timeout = -1ms})) ==
        "request to " + origin + " timed out before it was sent");

  // Still serving after all of that.
  CHECK(response_of(send(*client, origin + "/echo")).status == 200);
}

TEST_CASE("connecting is bounded by the connect timeout", "[gateway][client]") {
  IoThread io;
  ClientOptions options;
  options.connect_timeout = 200ms;
  auto client = make_client(io, options);
  // A non-routable address (TEST-NET-1 is blackholed on most hosts); either it times out or the
  // network says unreachable at once. Both are runtime errors well inside the deadline.
  const auto started = Clock::now();
  const std::string message = error_of(send(*client, "http://192.0.2.1:81/", {.timeout = 5000ms}));
  CHECK((message == "connecting to http://192.0.2.1:81 timed out" ||
         message.starts_with("cannot connect to http://192.0.2.1:81")));
  CHECK(Clock::now() - started < 2s);
}

TEST_CASE("response bodies are capped, never truncated", "[gateway][client]") {
  IoThread io;
  TestServer server;
  ClientOptions options;
  options.response_bytes = 1000;
  auto client = make_client(io, options);
  CHECK(response_of(send(*client, server.origin() + "/big/1000")).body.size() == 1000);
  CHECK(error_of(send(*client, server.origin() + "/big/1001")) ==
        "response body exceeds 1000 bytes");
  CHECK(error_of(send(*client, server.origin() + "/big-chunked/5000")) ==
        "response body exceeds 1000 bytes");
  CHECK(error_of(send(*client, server.origin() + "/gzip-bomb/100000")) ==
        "response body exceeds 1000 bytes");
}

TEST_CASE("chunked and compressed bodies are decoded", "[gateway][client]") {
  IoThread io;
  TestServer server;
  auto client = make_client(io);
  CHECK(response_of(send(*client, server.origin() + "/chunked")).body == "hello chunked world");
  const auto gzip = response_of(send(*client, server.origin() + "/gzip"));
  CHECK(gzip.body == "hello compressed");
  for (const auto& [name, value] : gzip.headers) {
    CHECK(name != "Content-Encoding");
    CHECK(name != "Content-Length");
  }
  CHECK(response_of(send(*client, server.origin() + "/deflate")).body == "hello compressed");
  CHECK(error_of(send(*client, server.origin() + "/br")) ==
        "response from " + server.origin() +
            " has an unsupported Content-Encoding (only gzip and deflate are decoded)");
}

TEST_CASE("HTTPS verifies the certificate against the CA file", "[gateway][client][tls]") {
  IoThread io;
  const auto identity = testing::make_self_signed({"IP:127.0.0.1", "DNS:localhost"});
  TestServer server(identity);
  const TempFile ca(identity.cert_pem);

  ClientOptions trusted;
  trusted.ca_file = ca.path();
  auto client = make_client(io, trusted);
  const auto response = response_of(send(*client, server.origin() + "/echo"));
  CHECK(response.status == 200);
  CHECK(response.body.find("Host: 127.0.0.1:" + std::to_string(server.port())) !=
        std::string::npos);
  CHECK(response_of(send(*client, server.origin() + "/echo")).status == 200);
  CHECK(server.connections() == 1);

  auto untrusting = make_client(io);  // the system store only
  CHECK(error_of(send(*untrusting, server.origin() + "/echo")) ==
        "TLS handshake with " + server.origin() +
            " failed (certificate verification failed: self-signed certificate)");
  CHECK(server.requests() == 2);
}

TEST_CASE("HTTPS checks that the certificate names the host", "[gateway][client][tls]") {
  IoThread io;
  const auto identity = testing::make_self_signed({"DNS:other.test"});
  TestServer server(identity);
  const TempFile ca(identity.cert_pem);
  ClientOptions options;
  options.ca_file = ca.path();
  options.system_trust = ClientOptions::SystemTrust::ignore_system_store_for_tests;
  auto client = make_client(io, options);
  CHECK(error_of(send(*client, server.origin() + "/echo")) ==
        "TLS handshake with " + server.origin() +
            " failed (certificate verification failed: IP address mismatch)");
  CHECK(server.requests() == 0);
}

TEST_CASE("an unreadable CA file is a start-up problem", "[gateway][client][tls]") {
  IoThread io;
  ClientOptions options;
  options.ca_file = "/nonexistent/ca.pem";
  auto created = HttpClient::create(io.io(), options);
  REQUIRE(std::holds_alternative<std::vector<std::string>>(created));
  CHECK(std::get<std::vector<std::string>>(created).at(0).starts_with(
      "CA file /nonexistent/ca.pem: cannot load certificates"));
}

TEST_CASE("an aborted exchange ends at once and its connection goes back to no pool",
          "[gateway][client][abort]") {
  IoThread io;
  TestServer server;
  auto client = make_client(io);
  CHECK(response_of(send(*client, server.origin() + "/echo")).status == 200);
  CHECK(client->connections_opened() == 1);  // and pooled

  // /slow answers after 5 s; the abort comes first, on the pooled connection it took.
  const UrlResult slow = normalise_url(server.origin() + "/slow", "");
  REQUIRE(std::holds_alternative<NormalisedUrl>(slow));
  auto abort = std::make_shared<FetchAbort>();
  auto promise = std::make_shared<std::promise<ClientResult>>();
  auto future = promise->get_future();
  client->send(
      ClientRequest{Method::get, std::get<NormalisedUrl>(slow), {}, {}}, Clock::now() + 20s,
      [promise](ClientResult result) { promise->set_value(std::move(result)); }, abort);
  abort->abort();
  REQUIRE(future.wait_for(20s) == std::future_status::ready);
  CHECK(error_of(future.get()) ==
        "request to " + server.origin() + " aborted before its response arrived");

  // The next request cannot have the aborted connection: it opens its own.
  CHECK(response_of(send(*client, server.origin() + "/echo")).status == 200);
  CHECK(client->connections_opened() == 2);

  // Aborted before it is sent: nothing is opened.
  auto early = std::make_shared<FetchAbort>();
  early->abort();
  auto early_promise = std::make_shared<std::promise<ClientResult>>();
  auto early_future = early_promise->get_future();
  client->send(
      ClientRequest{Method::get, std::get<NormalisedUrl>(slow), {}, {}}, Clock::now() + 20s,
      [early_promise](ClientResult result) { early_promise->set_value(std::move(result)); }, early);
  REQUIRE(early_future.wait_for(20s) == std::future_status::ready);
  CHECK(error_of(early_future.get()).ends_with("aborted before its response arrived"));
}
