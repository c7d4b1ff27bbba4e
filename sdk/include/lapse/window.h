/* lapse C ABI — the window model: streams, tokens, close options, durations.
 *
 * A window is a pair of positions in one stream. profile_start opens it and
 * hands back a token; profile_end closes it; resolve later turns the token
 * into a duration. Backends key every window on its token, never on "the
 * current window", so windows nest and overlap freely.
 */
#ifndef LAPSE_WINDOW_H
#define LAPSE_WINDOW_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A stream index on a device: 0 .. stream_count-1. */
typedef uint32_t lapse_stream;

/* Identifies one window from start until it is resolved or abandoned.
 *
 * A small value type, passed by value; frozen (no struct_size) because it
 * crosses on the hot path. `opened_on` is the stream the window was opened
 * on: close and abandon act on it, never on the caller's idea of a stream,
 * and a backend refuses a token whose opened_on does not match its record
 * (LAPSE_ERROR_WRONG_STREAM). Ids are never 0 and never reused by a device. */
typedef struct lapse_token {
    uint64_t id;
    lapse_stream opened_on;
    uint32_t reserved; /* 0 */
} lapse_token;

/* profile_end flags. */
enum {
    /* A batching backend runs everything it still holds queued before the
     * window closes, so the window holds all the work registered in it.
     * Non-batching backends ignore it; forwarding backends pass it down. */
    LAPSE_END_FLUSH = 1u << 0
};

typedef struct lapse_end_options {
    uint32_t struct_size; /* sizeof(lapse_end_options) */
    uint32_t flags;       /* LAPSE_END_* */
} lapse_end_options;

/* How a duration was measured: per measurement, never just per backend. */
typedef enum lapse_timing_method {
    LAPSE_TIMING_NONE = 0,   /* not measured */
    LAPSE_TIMING_SYSTEM = 1, /* host clock around syncs */
    LAPSE_TIMING_DEVICE = 2  /* the device's own clock (markers, queries, events) */
} lapse_timing_method;

typedef enum lapse_duration_state {
    LAPSE_DURATION_PENDING = 0,      /* the device has not reached the end yet */
    LAPSE_DURATION_READY = 1,        /* start_ns / end_ns are valid */
    /* Nothing ran in the window, or its stamps were lost. Distinct from a
     * duration of zero, which is the fastest duration there is. */
    LAPSE_DURATION_NOT_MEASURED = 2,
    LAPSE_DURATION_FAILED = 3        /* a device error hit the window: never read it as fast */
} lapse_duration_state;

typedef enum lapse_clock_domain {
    LAPSE_CLOCK_NONE = 0,
    LAPSE_CLOCK_HOST_MONOTONIC = 1, /* CLOCK_MONOTONIC ns, comparable across backends */
    LAPSE_CLOCK_DEVICE = 2          /* the device's own timeline, ns since an arbitrary origin */
} lapse_clock_domain;

/* lapse_duration flags: what a READY duration holds besides its work.
 * Bits are only appended; a reader ignores bits it does not know. */
enum {
    /* Work registered in the window was still queued in a batching backend
     * when the window closed without LAPSE_END_FLUSH: the duration covers
     * what ran, not all the work (queued_ops says how many operations were
     * left). What production runs; never read it as the work's cost. */
    LAPSE_DURATION_WORK_QUEUED = 1u << 0,
    /* Work registered before the window opened, still queued then, ran
     * inside it: the duration holds earlier work too. */
    LAPSE_DURATION_HOLDS_EARLIER_WORK = 1u << 1
};

/* queued_ops saturates here: the value means "this many or more". */
#define LAPSE_DURATION_QUEUED_OPS_MAX 0xFFFFu

typedef struct lapse_duration {
    uint32_t struct_size;  /* set by the caller: sizeof(lapse_duration) */
    uint32_t state;        /* lapse_duration_state */
    uint32_t method;       /* lapse_timing_method; LAPSE_TIMING_NONE unless READY */
    uint32_t clock_domain; /* lapse_clock_domain of start_ns / end_ns */
    int64_t start_ns;      /* valid when READY */
    int64_t end_ns;        /* valid when READY; end_ns - start_ns >= 0 and fits in int64_t */
    lapse_status failure;  /* when FAILED: the device error that poisoned it */
    /* LAPSE_DURATION_* flags (0 from a backend that never batches). These
     * two fields took the place of a 32-bit `reserved` that was always 0,
     * so the struct keeps its 40 bytes and an older plugin reads "no flags". */
    uint16_t flags;
    /* With LAPSE_DURATION_WORK_QUEUED: how many operations were left queued
     * at close, saturating at LAPSE_DURATION_QUEUED_OPS_MAX; else 0. */
    uint16_t queued_ops;
} lapse_duration;

#ifdef __cplusplus
}
#endif

#endif /* LAPSE_WINDOW_H */
