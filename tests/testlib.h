/*
 * testlib.h -- a minimal test harness. A test binary defines groups with
 * TEST_GROUP(name) { ... CHECK(...) ... } and lists them in TEST_MAIN(...).
 * `./test_x` runs every group, `./test_x NAME` one group. The last line of
 * output is "TESTS <passed> <failed>", which tests/run.sh adds up.
 */
#ifndef ARKCOS_TESTLIB_H
#define ARKCOS_TESTLIB_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tl_passed, tl_failed;

#define CHECK(cond, ...)                                             \
  do {                                                               \
    if (cond) {                                                      \
      tl_passed++;                                                   \
    } else {                                                         \
      tl_failed++;                                                   \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                  \
      fprintf(stderr, "\n");                                         \
    }                                                                \
  } while (0)

/* CHECK that a measured value is <= bound, printing both either way so the
 * log records what was measured. */
#define CHECK_LE(what, value, bound)                                     \
  do {                                                                   \
    double tl_v = (value), tl_b = (bound);                               \
    printf("  %-60s %.3e (bound %.1e)\n", what, tl_v, tl_b);             \
    CHECK(tl_v <= tl_b, "%s = %.3e exceeds %.1e", what, tl_v, tl_b);     \
  } while (0)

#define CHECK_GE(what, value, bound)                                     \
  do {                                                                   \
    double tl_v = (value), tl_b = (bound);                               \
    printf("  %-60s %.3e (at least %.1e)\n", what, tl_v, tl_b);          \
    CHECK(tl_v >= tl_b, "%s = %.3e is below %.1e", what, tl_v, tl_b);    \
  } while (0)

typedef struct {
  const char *name;
  void (*fn)(void);
} tl_group;

#define TEST_GROUP(name) static void tg_##name(void)
#define TG(name) {#name, tg_##name}

#define TEST_MAIN(...)                                                      \
  int main(int argc, char **argv) {                                         \
    static const tl_group groups[] = {__VA_ARGS__};                         \
    int n = (int)(sizeof groups / sizeof groups[0]), ran = 0;               \
    for (int i = 0; i < n; i++) {                                           \
      if (argc > 1 && strcmp(argv[1], groups[i].name)) continue;            \
      int f0 = tl_failed;                                                   \
      printf("[%s]\n", groups[i].name);                                     \
      fflush(stdout);                                                       \
      groups[i].fn();                                                       \
      printf("%s %s\n", tl_failed == f0 ? "ok  " : "FAIL", groups[i].name); \
      fflush(stdout);                                                       \
      ran++;                                                                \
    }                                                                       \
    if (!ran) {                                                             \
      fprintf(stderr, "no test group named %s\n", argc > 1 ? argv[1] : "");  \
      return 2;                                                             \
    }                                                                       \
    printf("TESTS %d %d\n", tl_passed, tl_failed);                          \
    return tl_failed ? 1 : 0;                                               \
  }

#endif
