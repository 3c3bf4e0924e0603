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
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <variant>

#include "server/json_rpc.h"

namespace codemode::server {

class RequestStates {
 public:
  // `key`: 32 bytes; empty: random bytes of this process. `ttl`: how long a state may come back.
  RequestStates(std::string key, std::chrono::seconds ttl);

  // `state` (a JSON object) with `principal`, an expiry and a fresh id, sealed: base64 text.
  std::string seal(Json state, std::string_view principal) const;
  // The state a client sent back, or why it is refused: not one of ours or changed, another
  // principal's, expired, or already used.
  std::variant<Json, std::string> open(std::string_view sealed, std::string_view principal);

  std::chrono::seconds ttl() const { return ttl_; }

 private:
  std::string key_;
  std::chrono::seconds ttl_;
  std::mutex mutex_;
  std::map<std::string, std::int64_t> used_;  // state id -> its expiry (unix seconds)
};

// policy.approval_key as bytes: 64 hex digits; nullopt when it is not.
std::optional<std::string> approval_key_bytes(std::string_view hex);

}  // namespace codemode::server
