/* What the C host API tests share: checks that count instead of abort, a
 * spinning work function, and opening the device under test. C99. */
#ifndef LAPSE_C_HOST_TEST_H
#define LAPSE_C_HOST_TEST_H

#define _POSIX_C_SOURCE 200809L

#include <lapse/host_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MS 1000000LL

static int c_host_failures = 0;
static int c_host_checks = 0;

#define CHECK(cond)                                                              \
    do {                                                                         \
        ++c_host_checks;                                                         \
        if (!(cond)) {                                                           \
            ++c_host_failures;                                                   \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
        }                                                                        \
    } while (0)

/* A check on a status, printing the message when it is not the one wanted. */
#define CHECK_STATUS(call, want, err)                                                             \
    do {                                                                                          \
        lapse_status check_status_got_ = (call);                                                  \
        ++c_host_checks;                                                                          \
        if (check_status_got_ != (want)) {                                                        \
            ++c_host_failures;                                                                    \
            fprintf(stderr, "%s:%d: %s answered %s, wanted %s: %s\n", __FILE__, __LINE__, #call,  \
                    lapse_status_name(check_status_got_), lapse_status_name(want), (err).message); \
        }                                                                                         \
    } while (0)

/* A check that a message names what it should. */
#define CHECK_MESSAGE(err, needle)                                                                  \
    do {                                                                                            \
        ++c_host_checks;                                                                            \
        if (strstr((err).message, (needle)) == NULL) {                                              \
            ++c_host_failures;                                                                      \
            fprintf(stderr, "%s:%d: message '%s' lacks '%s'\n", __FILE__, __LINE__, (err).message, \
                    (needle));                                                                      \
        }                                                                                           \
    } while (0)

/* Stops the test at once: what follows cannot run. */
#define REQUIRE(cond)                                                                       \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "%s:%d: REQUIRE(%s) failed; stopping\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

static inline lapse_error c_host_error(void)
{
    lapse_error e;
    memset(&e, 0, sizeof e);
    e.struct_size = sizeof e;
    return e;
}

static inline lapse_duration c_host_out(void)
{
    lapse_duration d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    return d;
}

static inline int64_t c_host_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Spins for `ns` and answers how long it really spun. */
static inline int64_t c_host_spin(int64_t ns)
{
    int64_t start = c_host_now_ns(), now = start;
    while (now - start < ns) now = c_host_now_ns();
    return now - start;
}

/* Work that spins for spin->want ns on the stream and records the truth.
 * `spun` is written on the stream's thread and read on the caller's, after
 * a sync: atomically (C99 has no <stdatomic.h>; GCC and Clang builtins), so
 * that ThreadSanitizer sees the pair whatever the backend syncs with. */
typedef struct c_host_spin_work {
    int64_t want;
    int64_t spun;
} c_host_spin_work;

static inline void c_host_spin_fn(void* user, void* native)
{
    c_host_spin_work* w = (c_host_spin_work*)user;
    (void)native;
    __atomic_store_n(&w->spun, c_host_spin(w->want), __ATOMIC_RELEASE);
}

static inline int64_t c_host_spun(c_host_spin_work* w) { return __atomic_load_n(&w->spun, __ATOMIC_ACQUIRE); }

static inline void c_host_free_fn(void* user) { free(user); }

/* Submits ~ns of spinning to `stream` (the work owns a heap copy). */
static inline void c_host_busy(lapse_host_device* dev, lapse_stream stream, int64_t ns)
{
    lapse_error err = c_host_error();
    c_host_spin_work* w = (c_host_spin_work*)malloc(sizeof *w);
    REQUIRE(w != NULL);
    w->want = ns;
    w->spun = 0;
    CHECK_STATUS(lapse_host_submit(dev, stream, c_host_spin_fn, w, c_host_free_fn, &err), LAPSE_OK, err);
}

/* Resolves, waiting up to 30 s, and insists on a READY interval. */
static inline lapse_duration c_host_must_resolve(lapse_host_duration* d, const char* what)
{
    lapse_error err = c_host_error();
    lapse_duration out = c_host_out();
    lapse_status s = lapse_host_duration_resolve(d, 30000LL * MS, &out, &err);
    if (s != LAPSE_OK || out.state != LAPSE_DURATION_READY) {
        fprintf(stderr, "%s: resolve answered %s, state %u: %s\n", what, lapse_status_name(s), out.state, err.message);
        ++c_host_failures;
    }
    CHECK(out.end_ns - out.start_ns >= 0);
    CHECK(out.method != LAPSE_TIMING_NONE);
    CHECK(out.clock_domain != LAPSE_CLOCK_NONE);
    lapse_host_duration_release(d);
    return out;
}

static inline int64_t c_host_ns(const lapse_duration* d) { return d->end_ns - d->start_ns; }

static inline int c_host_report(const char* name)
{
    printf("%s: %d checks, %d failed\n", name, c_host_checks, c_host_failures);
    return c_host_failures == 0 ? 0 : 1;
}

#endif /* LAPSE_C_HOST_TEST_H */
