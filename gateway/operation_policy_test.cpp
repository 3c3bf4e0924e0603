#include "gateway/operation_policy.h"

#include <catch2/catch.hpp>

using namespace codemode::gateway;

namespace {
OperationPolicy spec_policy(std::set<Method> methods = {}) {
  return OperationPolicy(
      OperationPolicyOptions{std::vector<Operation>{{Method::get, "/orders"},
                                                    {Method::post, "/orders"},
                                                    {Method::get, "/orders/{orderId}"},
                                                    {Method::post, "/orders/{orderId}/cancel"},
                                                    {Method::get, "/files/{name}.json"},
                                                    {Method::get, "/"}},
                             {"/v1/"},
                             std::move(methods)});
}
}  // namespace

TEST_CASE("by default every path and method passes", "[gateway][operations]") {
  const OperationPolicy open;
  CHECK_FALSE(open.check(Method::del, "/anything/at/all?x=1"));
  CHECK_FALSE(open.check(Method::post, "/"));
}

TEST_CASE("operations: spec allows declared method + path templates only",
          "[gateway][operations]") {
  const auto policy = spec_policy();
  CHECK_FALSE(policy.check(Method::get, "/orders"));
  CHECK_FALSE(policy.check(Method::get, "/orders?status=paid&limit=3"));  // query allowed
  CHECK_FALSE(policy.check(Method::post, "/orders"));
  CHECK_FALSE(policy.check(Method::get, "/orders/ord_0001"));
  CHECK_FALSE(policy.check(Method::head, "/orders/ord_0001"));  // HEAD where GET is declared
  CHECK_FALSE(policy.check(Method::post, "/orders/ord_0001/cancel"));
  CHECK_FALSE(policy.check(Method::get, "/files/report.json"));
  CHECK_FALSE(policy.check(Method::get, "/"));
  CHECK_FALSE(policy.check(Method::get, "/v1/orders/ord_0001"));  // under a server's base path

  CHECK(policy.check(Method::del, "/orders/ord_0001") ==
        "DELETE /orders/ord_0001 matches no operation in the API description");
  CHECK(policy.check(Method::get, "/orders/ord_0001/cancel"));  // declared for POST only
  CHECK(policy.check(Method::get, "/orders/"));                 // empty parameter segment
  CHECK(policy.check(Method::get, "/orders/a/b"));              // a parameter is one segment
  CHECK(policy.check(Method::get, "/admin"));
  CHECK(policy.check(Method::get, "/files/.json"));
  CHECK(policy.check(Method::get, "/v1orders"));  // base path is a whole segment
}

TEST_CASE("methods narrow what is allowed, e.g. read-only", "[gateway][operations]") {
  const OperationPolicy read_only(
      OperationPolicyOptions{std::nullopt, {}, {Method::get, Method::head}});
  CHECK_FALSE(read_only.check(Method::get, "/anything"));
  CHECK_FALSE(read_only.check(Method::head, "/anything"));
  CHECK(read_only.check(Method::post, "/orders") ==
        "method POST is not allowed here (allowed: GET, HEAD)");
  const auto both = spec_policy({Method::get});
  CHECK(both.check(Method::post, "/orders") == "method POST is not allowed here (allowed: GET)");
  CHECK_FALSE(both.check(Method::get, "/orders"));
}

TEST_CASE("operation_of names the declared operation a request matched",
          "[gateway][operations][audit]") {
  const auto policy = spec_policy();
  CHECK(policy.operation_of(Method::get, "/v1/orders/ord_0001?x=1") == "GET /orders/{orderId}");
  CHECK(policy.operation_of(Method::head, "/orders/ord_0001") == "GET /orders/{orderId}");
  CHECK(policy.operation_of(Method::post, "/orders/o/cancel") == "POST /orders/{orderId}/cancel");
  CHECK(policy.operation_of(Method::del, "/orders/ord_0001") == std::nullopt);
  CHECK(policy.operation_of(Method::get, "/admin") == std::nullopt);
  CHECK(OperationPolicy().operation_of(Method::get, "/orders") == std::nullopt);
}

TEST_CASE("loose matching (approvals) takes the spellings loosely routing servers take",
          "[gateway][operations]") {
  OperationPolicyOptions options{std::vector<Operation>{{Method::post, "/orders"},
                                                        {Method::post, "/orders/{orderId}/cancel"},
                                                        {Method::get, "/files/{name}.json"},
                                                        {Method::get, "/"}},
                                 {"/v1/"},
                                 {}};
  const OperationPolicy exact(options);
  options.loose = true;
  const OperationPolicy loose(options);
  for (const char* target : {"/orders/", "//orders", "/Orders", "/V1/ORDERS/", "/orders?x=1"}) {
    CAPTURE(target);
    REQUIRE(loose.find(Method::post, target) != nullptr);
    CHECK(loose.find(Method::post, target)->path_template == "/orders");
  }
  CHECK(exact.find(Method::post, "/orders/") == nullptr);
  CHECK(exact.find(Method::post, "/Orders") == nullptr);
  REQUIRE(loose.find(Method::post, "/ORDERS/o-1/Cancel/") != nullptr);
  CHECK(loose.find(Method::post, "/ORDERS/o-1/Cancel/")->path_template ==
        "/orders/{orderId}/cancel");
  CHECK(loose.find(Method::get, "/files/a.JSON") != nullptr);
  CHECK(loose.find(Method::get, "/") != nullptr);
  // Still no match where the segments differ.
  CHECK(loose.find(Method::post, "/orders2") == nullptr);
  CHECK(loose.find(Method::post, "/orders/o-1/cancel/now") == nullptr);
  CHECK(loose.find(Method::get, "/files/.json") == nullptr);
}
