// The fuzz targets' invariant check: always on (NDEBUG or not), and it names the belief that
// failed, so a crash report says which promise broke before the stack says where.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition, belief)                                                              \
  do {                                                                                             \
    if (!(condition)) {                                                                            \
      (void)std::fprintf(stderr, "%s:%d: invariant broken: %s (%s)\n", __FILE__, __LINE__, belief, \
                         #condition);                                                              \
      std::abort();                                                                                \
    }                                                                                              \
  } while (false)
