/*
 * check.h — the unit tests' only harness: CHECK(expr) prints file:line and the failed expression and
 * marks the test failed; the test keeps going so one run shows every failure. main() ends with
 * `return check_result();` (0 = all checks passed, 1 = at least one failed).
 * SKIP(msg) ends the test with status 77 (ctest SKIP_RETURN_CODE).
 */
#ifndef PV_TEST_CHECK_H
#define PV_TEST_CHECK_H
#include <stdio.h>
#include <stdlib.h>

static int check_failures;

#define CHECK(expr)                                                                      \
    do {                                                                                 \
        if (!(expr)) {                                                                   \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #expr);     \
            check_failures++;                                                            \
        }                                                                                \
    } while (0)

/* CHECK with a printf-style explanation printed on failure. */
#define CHECKF(expr, ...)                                                                \
    do {                                                                                 \
        if (!(expr)) {                                                                   \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #expr);     \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
            check_failures++;                                                            \
        }                                                                                \
    } while (0)

#define SKIP(...)                                                                        \
    do {                                                                                 \
        printf("SKIP: ");                                                                \
        printf(__VA_ARGS__);                                                             \
        printf("\n");                                                                    \
        exit(77);                                                                        \
    } while (0)

static inline int check_result(void)
{
    if (check_failures) fprintf(stderr, "%d check(s) failed\n", check_failures);
    return check_failures ? 1 : 0;
}

#endif
