// Which requests wait for a person (policy.approve), and what an approval binds to.
#include "gateway/approval.h"

#include <catch2/catch.hpp>

namespace {

using namespace codemode::gateway;

TEST_CASE("path patterns: * is one segment, ** any number", "[gateway][approval]") {
  CHECK(path_matches("/orders", "/orders"));
  CHECK_FALSE(path_matches("/orders", "/orders/1"));
  CHECK(path_matches("/orders/*/cancel", "/orders/o-1/cancel"));
  CHECK_FALSE(path_matches("/orders/*/cancel", "/orders/cancel"));
  CHECK_FALSE(path_matches("/orders/*/cancel", "/orders/a/b/cancel"));
  CHECK(path_matches("/admin/**", "/admin"));
  CHECK(path_matches("/admin/**", "/admin/users/7/roles"));
  CHECK_FALSE(path_matches("/admin/**", "/administrator"));
  CHECK(path_matches("/**/delete", "/a/b/delete"));
  CHECK_FALSE(path_matches("/**/delete", "/a/b/delete/now"));
  // Spellings a loosely routing server takes for the same path match too: a rule is not walked
  // around by a trailing or doubled '/', or by the case of a literal.
  CHECK(path_matches("/orders", "/orders/"));
  CHECK(path_matches("/orders", "//orders"));
  CHECK(path_matches("/orders/*/cancel", "/Orders/o-1//CANCEL/"));
  CHECK(path_matches("/admin/**", "/ADMIN/users"));
  CHECK_FALSE(path_matches("/orders", "/orders2"));
  // And as the operations are matched: ';' parameters cut, a format suffix at the end.
  CHECK(path_matches("/orders", "/orders;x=1"));
  CHECK(path_matches("/orders", "/orders.json"));
  CHECK(path_matches("/orders/*/cancel", "/orders;a=1/o-1/cancel.xml"));
  CHECK(path_matches("/admin/**", "/admin;x/users"));
  CHECK_FALSE(path_matches("/orders/*/cancel", "/orders.json/o-1/cancel"));
}

TEST_CASE("a request needs approval by method, then by operation, tag or path",
          "[gateway][approval]") {
  const Operation create{Method::post, "/orders", {}, "createOrder", "Create an order", {"Orders"}};
  const Operation cancel{Method::post, "/orders/{orderId}/cancel", {}, "cancelOrder",
                         "Cancel",     {"Orders", "Danger"}};
  ApprovalRules writes;
  writes.methods = {Method::post, Method::put, Method::patch, Method::del};
  CHECK(needs_approval(writes, Method::post, "/anything", nullptr, {}));
  CHECK(needs_approval(writes, Method::del, "/orders/1", nullptr, {}));
  CHECK_FALSE(needs_approval(writes, Method::get, "/orders", &create, {}));
  CHECK_FALSE(needs_approval(writes, Method::head, "/orders", nullptr, {}));

  ApprovalRules by_operation = writes;
  by_operation.operations = {"createOrder"};
  CHECK(needs_approval(by_operation, Method::post, "/orders", &create, {}));
  CHECK_FALSE(needs_approval(by_operation, Method::post, "/orders/1/cancel", &cancel, {}));
  // Matching no declared operation, a request may be any of them upstream: asked (fail closed).
  CHECK(needs_approval(by_operation, Method::post, "/undeclared", nullptr, {}));
  CHECK_FALSE(needs_approval(by_operation, Method::get, "/undeclared", nullptr, {}));

  ApprovalRules by_tag = writes;
  by_tag.tags = {"Danger"};
  CHECK(needs_approval(by_tag, Method::post, "/orders/1/cancel", &cancel, {}));
  CHECK_FALSE(needs_approval(by_tag, Method::post, "/orders", &create, {}));
  CHECK(needs_approval(by_tag, Method::post, "/undeclared", nullptr, {}));

  ApprovalRules by_path = writes;
  by_path.paths = {"/orders/*/cancel"};
  CHECK(needs_approval(by_path, Method::post, "/orders/1/cancel", nullptr, {}));
  CHECK(needs_approval(by_path, Method::post, "/v1/orders/1/cancel", nullptr, {"/v1"}));
  CHECK(needs_approval(by_path, Method::post, "/V1//orders;x/1/cancel.json", nullptr, {"/v1"}));
  CHECK_FALSE(needs_approval(by_path, Method::post, "/orders", &create, {"/v1"}));
  CHECK_FALSE(needs_approval(by_path, Method::post, "/undeclared", nullptr, {"/v1"}));

  ApprovalRules reads_too;  // a sensitive read can be listed with its method
  reads_too.methods = {Method::get};
  reads_too.paths = {"/exports/**"};
  CHECK(needs_approval(reads_too, Method::get, "/exports/all", nullptr, {}));
  CHECK_FALSE(needs_approval(reads_too, Method::get, "/orders", nullptr, {}));
  // HEAD is GET without the body, for approvals as for the operations policy.
  CHECK(needs_approval(reads_too, Method::head, "/exports/all", nullptr, {}));
  ApprovalRules heads_only;
  heads_only.methods = {Method::head};
  CHECK_FALSE(needs_approval(heads_only, Method::get, "/exports/all", nullptr, {}));
}

TEST_CASE("an approval digest binds method, URL, the code's headers and body",
          "[gateway][approval]") {
  const Headers json{{"Content-Type", "application/json"}};
  const std::string digest = approval_digest("POST", "http://h/orders", json, "{}");
  CHECK(digest.size() == 64);
  CHECK(digest == approval_digest("POST", "http://h/orders", json, "{}"));
  CHECK(digest != approval_digest("PUT", "http://h/orders", json, "{}"));
  CHECK(digest != approval_digest("POST", "http://h/orders?x", json, "{}"));
  CHECK(digest != approval_digest("POST", "http://h/orders", json, "{ }"));
  // A header that changes where the write lands or what it means is another request.
  CHECK(digest != approval_digest("POST", "http://h/orders", {}, "{}"));
  CHECK(digest != approval_digest("POST", "http://h/orders",
                                  {{"Content-Type", "application/json"}, {"Stripe-Account", "a"}},
                                  "{}"));
  CHECK(digest != approval_digest("POST", "http://h/orders",
                                  {{"Content-Type", "application/merge-patch+json"}}, "{}"));
  // What no server reads differently does not: the order of headers, the case of names.
  const Headers two{{"X-A", "1"}, {"x-b", "2"}};
  CHECK(approval_digest("POST", "http://h/o", two, "") ==
        approval_digest("POST", "http://h/o", {{"x-b", "2"}, {"x-a", "1"}}, ""));
  // The parts cannot be shifted into each other.
  CHECK(approval_digest("POST", "http://h/a", {}, "b") !=
        approval_digest("POST", "http://h/a\nb", {}, ""));
  CHECK(approval_digest("POST", "http://h/a", {{"x", "1"}}, "") !=
        approval_digest("POST", "http://h/a", {}, "x: 1\n"));
}

}  // namespace
