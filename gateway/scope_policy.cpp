#include "gateway/scope_policy.h"

#include <algorithm>

namespace codemode::gateway {
namespace {

// The scopes of `needed` that `granted` lacks, space-separated; empty: none. (auth/ has its
// twin for tool scopes; the gateway may not import auth.)
std::string missing_scopes(const std::vector<std::string>& needed,
                           const std::vector<std::string>& granted) {
  std::string missing;
  for (const std::string& scope : needed) {
    if (std::find(granted.begin(), granted.end(), scope) == granted.end()) {
      missing += (missing.empty() ? "" : " ") + scope;
    }
  }
  return missing;
}

std::vector<std::string> scopes_of_writes(const OperationPolicy& operations) {
  std::vector<std::string> all;
  for (const auto& operation : operations.operations()) {
    if (operation.method == Method::get || operation.method == Method::head) continue;
    for (const auto& alternative : operation.scopes) {
      for (const auto& scope : alternative) {
        if (std::find(all.begin(), all.end(), scope) == all.end()) all.push_back(scope);
      }
    }
  }
  return all;
}

}  // namespace

ScopePolicy::ScopePolicy(const RequestScopes& scopes)
    : read_(scopes.read),
      write_(scopes.write),
      by_operation_(scopes.operations.has_value()),
      operations_(scopes.operations.value_or(OperationPolicyOptions{})),
      write_scopes_(scopes_of_writes(operations_)) {}

std::optional<std::string> ScopePolicy::check(Method method, std::string_view target,
                                              const std::vector<std::string>& granted) const {
  const bool read = method == Method::get || method == Method::head;
  const std::string missing = missing_scopes(read ? read_ : write_, granted);
  if (!missing.empty()) {
    return std::string(to_string(method)) + " requests need scope " + missing +
           ", which the caller's access token lacks";
  }
  const Operation* operation = operations_.find(method, target);
  if (operation == nullptr) {
    if (read || !by_operation_) return std::nullopt;
    const std::string lacking = missing_scopes(write_scopes_, granted);
    if (lacking.empty()) return std::nullopt;
    const std::string_view path = target.substr(0, target.find('?'));
    return std::string(to_string(method)) + " " + std::string(path.substr(0, 200)) +
           " matches no operation in the API description, so it needs every scope the "
           "description's writes name; the caller's access token lacks " +
           lacking;
  }
  if (operation->scopes.empty()) return std::nullopt;
  for (const auto& alternative : operation->scopes) {
    if (missing_scopes(alternative, granted).empty()) return std::nullopt;
  }
  return std::string(to_string(operation->method)) + " " + operation->path_template +
         " needs scope " + missing_scopes(operation->scopes.front(), granted) +
         " (the API description's security), which the caller's access token lacks";
}

}  // namespace codemode::gateway
