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

TEST_CASE("a request matches in every spelling that servers route the same way",
          "[gateway][operations]") {
  const OperationPolicy policy(
      OperationPolicyOptions{std::vector<Operation>{{Method::post, "/orders"},
                                                    {Method::post, "/orders/{orderId}/cancel"},
                                                    {Method::get, "/files/{name}.json"},
                                                    {Method::get, "/v1:batchGet"},
                                                    {Method::get, "/"}},
                             {"/v1/"},
                             {}});
  // Case of literals, trailing and doubled '/', ';' parameters (Tomcat, Spring), format
  // suffixes (Rails, Spring), base paths in any case.
  for (const char* target : {"/orders", "/orders/", "//orders", "/Orders", "/V1/ORDERS/",
                             "/orders?x=1", "/orders;x=1", "/orders;jsessionid=A1/", "/;x/orders",
                             "/orders.json", "/orders.tar.gz", "/orders.", "/v1//Orders.XML"}) {
    CAPTURE(target);
    REQUIRE(policy.find(Method::post, target) != nullptr);
    CHECK(policy.find(Method::post, target)->path_template == "/orders");
    CHECK_FALSE(policy.check(Method::post, target));
  }
  REQUIRE(policy.find(Method::post, "/ORDERS/o-1;v=2/Cancel.json/") != nullptr);
  CHECK(policy.find(Method::post, "/ORDERS/o-1;v=2/Cancel.json/")->path_template ==
        "/orders/{orderId}/cancel");
  CHECK(policy.find(Method::get, "/files/a.JSON") != nullptr);
  CHECK(policy.find(Method::get, "/") != nullptr);
  CHECK(policy.find(Method::get, "/v1%3AbatchGet") != nullptr);  // servers decode before matching
  // Still no match where the segments differ; a format follows a literal only at the end.
  CHECK(policy.find(Method::post, "/orders2") == nullptr);
  CHECK(policy.find(Method::post, "/orders/o-1/cancel/now") == nullptr);
  CHECK(policy.find(Method::post, "/orders.json/o-1/cancel") == nullptr);
  CHECK(policy.find(Method::get, "/files/.json") == nullptr);
}

TEST_CASE("a concrete path matches before a template, whatever the document order",
          "[gateway][operations]") {
  const OperationPolicy policy(OperationPolicyOptions{
      std::vector<Operation>{{Method::post, "/orders/{orderId}", {}, "updateOrder"},
                             {Method::get, "/orders/{orderId}", {}, "getOrder"},
                             {Method::post, "/orders/purge", {}, "purgeOrders"},
                             {Method::del, "/orders/archive", {}, "deleteArchive"},
                             {Method::get, "/{kind}/{id}/items", {}, "listItems"},
                             {Method::get, "/orders/{orderId}/{part}", {}, "getPart"}},
      {},
      {}});
  const auto id_of = [&](Method method, std::string_view target) -> std::string {
    const Operation* operation = policy.find(method, target);
    return operation == nullptr ? "none" : operation->id;
  };
  CHECK(id_of(Method::post, "/orders/purge") == "purgeOrders");
  CHECK(id_of(Method::post, "/Orders/PURGE.json") == "purgeOrders");
  CHECK(id_of(Method::post, "/orders/o-1") == "updateOrder");
  CHECK(id_of(Method::head, "/orders/o-1") == "getOrder");
  CHECK(policy.operation_of(Method::post, "/orders/purge?now=1") == "POST /orders/purge");
  // The concrete path is the match; the method it does not declare is not taken from the
  // template (fail closed: no operation).
  CHECK(id_of(Method::get, "/orders/purge") == "none");
  CHECK(id_of(Method::post, "/orders/archive") == "none");
  CHECK(policy.check(Method::post, "/orders/archive") ==
        "POST /orders/archive matches no operation in the API description");
  // Specificity is decided from the left: /orders/{orderId}/{part} over /{kind}/{id}/items.
  CHECK(id_of(Method::get, "/orders/o-1/items") == "getPart");
}
