// Which OAuth scopes a scoped caller's requests need (config http.oauth.request_scopes): by
// method, and with `request_scopes.spec` by the declared operation a request matches
// (OperationPolicy::find, the one matcher the operations policy, approvals and the audit trail
// use too, so no spelling walks around it).
//
// Built once from config with the gateway; immutable and shared by every thread afterwards.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/operation_policy.h"
#include "gateway/request_check.h"

namespace codemode::gateway {

// The scopes a scoped caller's requests need, by method (config http.oauth.request_scopes).
struct RequestScopes {
  std::vector<std::string> read;   // GET, HEAD
  std::vector<std::string> write;  // POST, PUT, PATCH, DELETE
  // Every declared operation with the scopes its security requirements ask for, when those count
  // too (`request_scopes.spec`): a request matching one (OperationPolicy::find) needs one of its
  // alternatives; a write that matches none needs every scope a declared write names.
  std::optional<OperationPolicyOptions> operations;
};

class ScopePolicy {
 public:
  explicit ScopePolicy(const RequestScopes& scopes);

  // Why a scoped caller's request cannot go with the scopes `granted`, or nothing: it needs the
  // scopes of its method, then one of the scope alternatives of the operation `target` matches,
  // whole (the first alternative's missing scopes are named); a write that matches no declared
  // operation needs every scope a declared write names (it may be any of them upstream).
  std::optional<std::string> check(Method method, std::string_view target,
                                   const std::vector<std::string>& granted) const;

 private:
  std::vector<std::string> read_;
  std::vector<std::string> write_;
  bool by_operation_;           // request_scopes.spec
  OperationPolicy operations_;  // request_scopes.operations; none given: matches nothing
  // Every scope a declared write operation names: what a scoped write that matches no declared
  // operation needs.
  std::vector<std::string> write_scopes_;
};

}  // namespace codemode::gateway
