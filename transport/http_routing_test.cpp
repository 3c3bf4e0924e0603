#include "transport/http_routing.h"

#include <catch2/catch.hpp>

using namespace codemode::server;

namespace {

PostFacts request(std::string_view method = "tools/list") {
  PostFacts facts;
  facts.is_request = true;
  facts.initialize = method == "initialize";
  return facts;
}

}  // namespace

TEST_CASE("the era rule: a request that claims 2026-07-28 is served by it, in either mode",
          "[server][routing]") {
  for (const HttpMode mode : {HttpMode::stateful, HttpMode::stateless}) {
    PostFacts by_header = request();
    by_header.mode = mode;
    by_header.version = "2026-07-28";
    by_header.has_session_id = true;  // ignored: the revision has no sessions
    CHECK(plan_post(by_header).route == PostRoute::stateless_revision);

    PostFacts by_meta = request("initialize");
    by_meta.mode = mode;
    by_meta.claims_revision = true;
    CHECK(plan_post(by_meta).route == PostRoute::stateless_revision);
  }
  // Only the plain header names it: an encoded value is no claim (finding 16 of issue 20).
  PostFacts encoded = request();
  encoded.version = "=?base64?MjAyNi0wNy0yOA==?=";
  encoded.has_session_id = true;
  CHECK(plan_post(encoded).route == PostRoute::named_session);
}

TEST_CASE("a notification naming 2026-07-28 is accepted with nothing to do", "[server][routing]") {
  PostFacts notification;
  notification.version = "2026-07-28";
  CHECK(plan_post(notification).route == PostRoute::accepted);
}

TEST_CASE("stateful: initialize makes a session, everything else names one", "[server][routing]") {
  CHECK(plan_post(request("initialize")).route == PostRoute::new_session);

  PostFacts again = request("initialize");
  again.has_session_id = true;
  const PostPlan refused = plan_post(again);
  CHECK(refused.route == PostRoute::refused);
  CHECK(refused.refusal->status == 400);
  CHECK(refused.refusal->message.starts_with("bad request: initialize starts a new session"));

  const PostPlan anonymous = plan_post(request());
  CHECK(anonymous.route == PostRoute::refused);
  CHECK(anonymous.refusal->message ==
        "bad request: Mcp-Session-Id header is required (initialize first)");

  PostFacts named = request();
  named.has_session_id = true;
  named.version = "1999-01-01";  // checked once the session is found (404 comes first)
  CHECK(plan_post(named).route == PostRoute::named_session);

  PostFacts notification;  // notifications/initialized, with its session
  notification.has_session_id = true;
  CHECK(plan_post(notification).route == PostRoute::named_session);
}

TEST_CASE("stateless mode: a fresh session per message, its version checked first",
          "[server][routing]") {
  PostFacts facts = request();
  facts.mode = HttpMode::stateless;
  CHECK(plan_post(facts).route == PostRoute::fresh_session);  // absent: 2025-03-26
  facts.version = "2025-11-25";
  CHECK(plan_post(facts).route == PostRoute::fresh_session);
  facts.version = "1999-01-01";
  const PostPlan refused = plan_post(facts);
  CHECK(refused.route == PostRoute::refused);
  CHECK(refused.refusal->status == 400);

  PostFacts initialize = request("initialize");
  initialize.mode = HttpMode::stateless;
  initialize.version = "1999-01-01";  // initialize negotiates: its header is not checked
  CHECK(plan_post(initialize).route == PostRoute::fresh_session);
}
