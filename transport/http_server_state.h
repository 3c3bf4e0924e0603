// The state an HttpServer shares with its connections: the listener, the admission of
// connections and their waiting list, the session table, requests in flight, and drain.
// Internal to the transport (http_transport.cpp: the listener; http_connection.cpp: one
// connection each). Every member is touched on the server's io_context only: connections run on
// strands of it and post to the State's own handlers, so nothing here needs a lock.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "transport/http_policy.h"
#include "transport/http_transport.h"

namespace codemode::server {

struct HttpServer::State {
  State(boost::asio::io_context& io_context, HttpOptions opts, SessionFactory factory)
      : io(io_context),
        options(std::move(opts)),
        make_session(std::move(factory)),
        acceptor(io_context),
        sessions(options.max_sessions, options.max_sessions_per_owner) {
    // One API is served at /mcp with the server-wide OAuth settings: the one path of the list.
    if (options.apis.empty()) {
      options.apis.push_back({"/mcp", options.oauth, options.verifier, options.claim_profiles});
    }
  }

  // The API a request path names (an index into options.apis), or nullopt.
  std::optional<std::size_t> api_at(std::string_view path) const {
    for (std::size_t i = 0; i < options.apis.size(); ++i) {
      if (options.apis[i].path == path) return i;
    }
    return std::nullopt;
  }

  // One POST request fewer in flight for `principal`; tells a drain when none is left.
  void request_done(const std::string& principal) {
    --in_flight;
    if (auto it = in_flight_by_principal.find(principal); it != in_flight_by_principal.end()) {
      if (--it->second == 0) in_flight_by_principal.erase(it);
    }
    maybe_drained();
  }
  void maybe_drained() {
    if (draining && in_flight == 0 && on_drained) std::exchange(on_drained, nullptr)();
  }

  // A connection not yet admitted: it has not sent an /mcp request that passed authentication.
  // `evict` closes it (posted to its strand); it holds the connection weakly.
  struct Waiting {
    std::string address;
    std::function<void()> evict;
  };
  using WaitingList = std::list<Waiting>;

  // Registers a new connection as waiting. Beyond the per-address or the total share of waiting
  // connections the oldest waiting one (of that address, else of all) is closed: idle or slow
  // connections cannot fill the table, and a client that sends its request at once always gets
  // in, however many idle connections came before it.
  WaitingList::iterator start_waiting(const std::string& address, std::function<void()> evict) {
    auto it = waiting.insert(waiting.end(), Waiting{address, std::move(evict)});
    if (++waiting_by_address[address] > options.max_waiting_per_address) {
      evict_oldest([&](const Waiting& w) { return w.address == address; });
    }
    if (waiting.size() > options.max_waiting_connections) {
      evict_oldest([](const Waiting&) { return true; });
    }
    return it;
  }
  void stop_waiting(WaitingList::iterator it) {
    if (auto count = waiting_by_address.find(it->address); --count->second == 0) {
      waiting_by_address.erase(count);
    }
    waiting.erase(it);
  }
  template <typename Predicate>
  void evict_oldest(Predicate matches) {
    for (auto it = waiting.begin(); it != waiting.end(); ++it) {
      if (!matches(*it)) continue;
      auto evict = std::move(it->evict);
      stop_waiting(it);
      evict();
      return;
    }
  }

  boost::asio::io_context& io;
  HttpOptions options;
  SessionFactory make_session;
  std::optional<HttpPolicy> policy;  // built by start(), once the port is known
  boost::asio::ip::tcp::acceptor acceptor;
  HttpSessionTable sessions;
  std::size_t admitted = 0;  // connections that passed authentication; max_connections of them
  WaitingList waiting;       // the others, oldest first
  std::map<std::string, std::size_t> waiting_by_address;
  std::size_t in_flight = 0;
  std::map<std::string, std::size_t> in_flight_by_principal;  // McpSession::principal()
  std::uint64_t sessions_started = 0;  // names the principals of sessions without tokens
  bool draining = false;
  std::function<void()> on_drained;
};

// Serves one accepted connection until it closes (http_connection.cpp).
void serve_connection(boost::asio::ip::tcp::socket socket,
                      std::shared_ptr<HttpServer::State> state);

}  // namespace codemode::server
