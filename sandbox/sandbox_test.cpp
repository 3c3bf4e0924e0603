#include "sandbox/sandbox.h"

#include <future>

#include <catch2/catch.hpp>

#include "sandbox/test_child.h"

using namespace codemode;
using namespace codemode::sandbox;

TEST_CASE("code_chars counts code points, not bytes", "[sandbox][input]") {
  CHECK(count_code_points("abc") == 3);
  CHECK(count_code_points("äö€😀") == 4);
  config::Limits limits;
  limits.code_chars = 4;
  CHECK_FALSE(check_input("äö€😀", limits));
  auto refused = check_input("abcde", limits);
  REQUIRE(refused);
  CHECK(refused->error_kind == channel::ErrorKind::input);
  CHECK(refused->error_message == "code is 5 characters; the limit is 4");
}

TEST_CASE("blank code is refused before any isolate", "[sandbox][input]") {
  auto refused = check_input(" \n\t ", config::Limits{});
  REQUIRE(refused);
  CHECK(refused->error_kind == channel::ErrorKind::input);
}

TEST_CASE("every submitted call completes exactly once, also at shutdown", "[sandbox][pool]") {
  std::atomic<int> completed{0};
  {
    Sandbox sandbox(test_sandbox_options());
    for (int i = 0; i < 50; ++i) {
      sandbox.submit(Call{channel::Tool::search, "async () => 1", "", nullptr},
                     [&](channel::Outcome) { ++completed; });
    }
  }  // the destructor drains the queue
  CHECK(completed == 50);
}
