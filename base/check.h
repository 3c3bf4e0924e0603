// The check for broken invariants: always on (NDEBUG or not), and it names the belief that
// failed, so that a crash report says which promise broke before the stack says where.
//
// Only for what cannot happen unless this program is wrong (a completion for a call that is not
// running, a snapshot that V8 did not make). What outsiders cause is never checked this way: it
// is a value (STYLE.md, "Errors by who caused them").
#pragma once

#include <cstdio>
#include <cstdlib>

#define CODEMODE_CHECK(condition, belief)                                                          \
  do {                                                                                             \
    if (!(condition)) [[unlikely]] {                                                               \
      (void)std::fprintf(stderr, "%s:%d: broken invariant: %s (%s)\n", __FILE__, __LINE__, belief, \
                         #condition);                                                              \
      std::abort();                                                                                \
    }                                                                                              \
  } while (false)
