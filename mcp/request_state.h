// MCP 2026-07-28's `requestState` for approvals (docs/mcp-2026-07-28.md; README.md,
// "Approvals"): what a call that waits for its user's answers hands the client to send back
// with them. The client carries it but can neither read nor change it: it is sealed with
// AES-256-GCM under a server key (config policy.approval_key; a fleet shares one, else each
// process makes its own and a retry must reach the same replica), bound to the principal and an
// expiry, and used once: a state this process has opened before is refused (in a fleet, each
// replica keeps its own record of that).
//
// Threading: any thread (a mutex guards the record of used states).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <variant>

#include "mcp/json_rpc.h"

namespace codemode::server {
// States remembered at once (each until it expires), over all principals and for one.
inline constexpr std::size_t kMaxUsedStates = 1'000'000;
inline constexpr std::size_t kMaxUsedStatesPerPrincipal = 100'000;

class RequestStates {
 public:
  // What time it is, for expiries (called on the threads that seal and open): the system
  // clock; tests pass their own to move time on.
  using Clock = std::function<std::chrono::system_clock::time_point()>;

  // `key`: 32 bytes; empty: random bytes of this process. `ttl`: how long a state may come back.
  // `per_principal`: how many unexpired used states one principal may hold. `api`: the API whose
  // calls the states are for (config `apis`), sealed into each and checked on the way back, so a
  // state of one API never opens at another even when their keys are the same; empty: none.
  RequestStates(
      std::string key, std::chrono::seconds ttl,
      std::size_t per_principal = kMaxUsedStatesPerPrincipal,
      Clock clock = [] { return std::chrono::system_clock::now(); }, std::string api = {});

  // `state` (a JSON object) with `principal`, an expiry and a fresh id, sealed: base64 text.
  std::string seal(Json state, std::string_view principal) const;
  // The state a client sent back, or why it is refused: not one of ours or changed, another
  // principal's, expired, or already used.
  std::variant<Json, std::string> open(std::string_view sealed, std::string_view principal);

  std::chrono::seconds ttl() const { return ttl_; }

 private:
  std::string key_;
  std::string api_;
  std::chrono::seconds ttl_;
  std::size_t per_principal_cap_;
  Clock clock_;
  // clock_'s time in unix seconds, the unit of a state's expiry.
  std::int64_t now_s() const;
  struct Used {
    std::int64_t exp;  // unix seconds
    std::string principal;
  };
  std::mutex mutex_;
  // The states opened and not yet expired, by id and by expiry (pruned from the oldest, so an
  // open costs a lookup, not a scan), and how many each principal holds (one principal filling
  // the record refuses its own retries, not everyone's).
  std::map<std::string, Used> used_;
  std::multimap<std::int64_t, std::string> expiries_;
  std::map<std::string, std::size_t, std::less<>> per_principal_;
};

// policy.approval_key as bytes: 64 hex digits; nullopt when it is not.
std::optional<std::string> approval_key_bytes(std::string_view hex);

}  // namespace codemode::server
