// Spec-aware policy: which method + path combinations `execute` may call, and which methods.
// Also the one matcher of a request to a declared operation: the scopes a request needs
// (`request_scopes.spec`), the approval rules and the audit trail ask it too.
//
// Off by default (every path, every method the gateway knows). A deployment can narrow it to
// the operations its API description declares (`policy.operations: "spec"` in the config) and
// to a set of methods (`policy.methods`, e.g. GET and HEAD for read-only use). Built once from
// plain data (the openapi module extracts the operations; the gateway does not read specs);
// immutable and shared by every thread afterwards.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/request_check.h"

namespace codemode::gateway {

// One declared operation: a method and a path template ("/orders/{orderId}/cancel").
struct Operation {
  Method method = Method::get;
  std::string path_template;
  // The OAuth scopes the description's security requirements ask for, one list per alternative
  // (openapi::DeclaredOperation::scopes); empty: none.
  std::vector<std::vector<std::string>> scopes;
  // From the description, for approvals (approval.h): its operationId, summary and tags.
  std::string id;
  std::string summary;
  std::vector<std::string> tags;
};

struct OperationPolicyOptions {
  // nullopt: any path. Otherwise only these operations.
  std::optional<std::vector<Operation>> operations;
  // Path prefixes the API is served under (from the description's servers, e.g. "/v1"); a
  // request path may carry any one of them before the template. "" is always tried.
  std::vector<std::string> base_paths;
  // Allowed methods; empty means all.
  std::set<Method> methods;
};

class OperationPolicy {
 public:
  explicit OperationPolicy(OperationPolicyOptions options = {});

  // nullopt: allowed. Otherwise the refusal, e.g. "POST /admin matches no operation in the API
  // description" or "method DELETE is not allowed here (allowed: GET, HEAD)".
  std::optional<std::string> check(Method method, std::string_view target) const;

  // The declared operation `method` and `target` (path and query) match, as the audit trail
  // writes it: "GET /orders/{orderId}"; nullopt when none does or no operations are given.
  std::optional<std::string> operation_of(Method method, std::string_view target) const;

  // The declared operation `method` and `target` match; nullptr when none does or no operations
  // are given. The path is read as loosely as servers route it (path_match.h); of the declared
  // paths it matches, the most specific wins, segment by segment from the left (concrete before
  // templated, as OpenAPI says), then the first in document order; that path's operation for
  // `method` is the match (HEAD: its GET when it declares no HEAD), and none when it has no such
  // method, even if a less specific path does.
  const Operation* find(Method method, std::string_view target) const {
    if (!options_.operations) return nullptr;
    return match(method, target.substr(0, target.find('?')));
  }

  // Whether any method or operation is refused (what makes override headers worth dropping).
  bool restricts() const { return options_.operations.has_value() || !options_.methods.empty(); }

  // The declared operations; empty when none are given.
  const std::vector<Operation>& operations() const;

 private:
  bool matches(Method method, std::string_view path) const {
    return match(method, path) != nullptr;
  }
  const Operation* match(Method method, std::string_view path) const;

  OperationPolicyOptions options_;
  std::vector<std::vector<std::string>> templates_;  // segments of each operation's template
  std::vector<std::vector<std::string>> bases_;      // segments of each base path; {} last
};

}  // namespace codemode::gateway
