/* lapse C ABI — compact resolve: many measured windows as bare stamp pairs.
 *
 * resolve writes a 40-byte lapse_duration per window, and a 40-byte store
 * into memory the cache does not hold first reads the line it writes: on a
 * bulk resolve that is most of the memory traffic. A caller that resolves
 * many windows per call (every window of a frame, a million closed in a
 * batch) mostly gets windows that simply measured. A device may offer the
 * extension below for that case: it answers each such window with 16
 * bytes of stamps and one byte of state, and leaves every other window
 * exactly as it was, for the normal resolve to answer in full.
 *
 * The rule that keeps it honest: resolve_compact takes (releases) only the
 * windows it answers READY, with stamps. A window that is final in any
 * other way (not measured, failed, READY with flags or another method or
 * clock than the extension names) and a token that names no live window
 * (unknown, abandoned, resolved already, another stream's) are untouched
 * and answered LAPSE_COMPACT_RESOLVE_FULL: resolve (plugin.h) then gives
 * their lapse_duration, their failure status and the message that names
 * the token. A window still pending is untouched and answered
 * LAPSE_COMPACT_PENDING, for either call later. So nothing is lost and no
 * window is released twice: two threads resolving one token (compactly,
 * in full, or one each) cannot both take it; the loser reads
 * LAPSE_COMPACT_RESOLVE_FULL, and resolve then tells it the token was
 * resolved already.
 *
 * A pair that is not READY never reads as a duration: resolve_compact
 * writes LAPSE_COMPACT_NO_STAMP into its end_ns (and 0 into start_ns), an
 * end nine quintillion nanoseconds before its start, which no READY pair
 * has (end_ns >= start_ns). Read the state first.
 *
 * A device offers the extension only for windows it can answer so (the CPU
 * plugin in stream mode, not in inline mode, which opens no windows; the
 * Vulkan plugin in own mode), and a host that does not find it resolves in
 * full as always.
 *
 * A host whose own records hold each token (the C++ API's Duration keeps
 * a pending window's token where a resolved one keeps its stamps) asks for
 * resolve_compact_strided when the device offers it: tokens are read and
 * pairs written in those records, so the host neither gathers tokens into
 * an array nor copies pairs back out of one.
 */
#ifndef LAPSE_RESOLVE_COMPACT_H
#define LAPSE_RESOLVE_COMPACT_H

#include <stddef.h>
#include <stdint.h>

#include "plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LAPSE_RESOLVE_COMPACT_EXTENSION "lapse.resolve_compact/1"

/* A READY window's stamps. Frozen (no struct_size), like lapse_token: an
 * element of an array whose density is the point; a wider pair would be
 * another extension id. end_ns - start_ns >= 0 and fits in int64_t. */
typedef struct lapse_stamp_pair {
    int64_t start_ns;
    int64_t end_ns;
} lapse_stamp_pair;

/* The end_ns of every pair whose state is not LAPSE_COMPACT_READY. */
#define LAPSE_COMPACT_NO_STAMP INT64_MIN

/* One byte per window: states[i]. Values are only appended. */
enum {
    /* The device has not reached the window's end: untouched; resolve it
     * again later (compactly or in full). Same meaning as
     * LAPSE_DURATION_PENDING. */
    LAPSE_COMPACT_PENDING = 0,
    /* stamps[i] holds the window (method and clock domain as the extension
     * struct says, no flags); the window is released. */
    LAPSE_COMPACT_READY = 1,
    /* Untouched: final but more than a pair of stamps can say (not
     * measured, failed, flagged), or not a live window of this device.
     * resolve answers it in full. */
    LAPSE_COMPACT_RESOLVE_FULL = 2
};

typedef lapse_status (*lapse_resolve_compact_fn)(lapse_device* device, const lapse_token* tokens,
                                                 lapse_stamp_pair* stamps, uint8_t* states, uint32_t count,
                                                 uint64_t timeout_ns, lapse_error* error);

/* resolve_compact over arrays of larger records: token i is the
 * lapse_token at (const char*)tokens + i * token_stride, pair i the
 * lapse_stamp_pair at (char*)stamps + i * stamp_stride (strides are
 * multiples of 8, at least 16). A pair may occupy the bytes of its own
 * token and of no other element's: a host whose records hold a token that
 * becomes a pair when it is resolved passes the same address and stride
 * for both, and no copy in either direction is made. So, unlike
 * resolve_compact, pair i is written only when states[i] is
 * LAPSE_COMPACT_READY, after token i was read; any other state leaves its
 * pair untouched (no LAPSE_COMPACT_NO_STAMP), and with it an overlapping
 * token, for the full resolve. Everything else is resolve_compact's. */
typedef lapse_status (*lapse_resolve_compact_strided_fn)(lapse_device* device, const lapse_token* tokens,
                                                         size_t token_stride, lapse_stamp_pair* stamps,
                                                         size_t stamp_stride, uint8_t* states, uint32_t count,
                                                         uint64_t timeout_ns, lapse_error* error);

/* get_extension(device, LAPSE_RESOLVE_COMPACT_EXTENSION) returns this, or
 * NULL when the device does not resolve compactly. Lives as long as the
 * device. [read from any thread] */
typedef struct lapse_resolve_compact {
    uint32_t struct_size;  /* sizeof(lapse_resolve_compact) as the plugin was built */
    uint32_t method;       /* lapse_timing_method of every READY pair */
    uint32_t clock_domain; /* lapse_clock_domain of every READY pair */
    uint32_t reserved;     /* 0 */

    /* Resolves `count` tokens into stamps[0..count) and states[0..count),
     * waiting up to `timeout_ns` (0 polls, LAPSE_WAIT_FOREVER waits) while
     * some window is LAPSE_COMPACT_PENDING. Every stamps[i] and states[i]
     * is written. Returns LAPSE_OK when every state is LAPSE_COMPACT_READY,
     * LAPSE_NOT_READY when some is not (the states say which, and what to
     * do with each), or LAPSE_ERROR_INVALID_ARGUMENT for a null device,
     * or null arrays with count > 0 (then nothing is written or taken).
     * A bad token is not an error here: it reads
     * LAPSE_COMPACT_RESOLVE_FULL, and resolve names it. Non-null.
     * [thread-safe] */
    lapse_resolve_compact_fn resolve_compact;

    /* Appended (read it only when struct_size reaches it): the strided
     * form above, or NULL when the device offers only resolve_compact.
     * [thread-safe] */
    lapse_resolve_compact_strided_fn resolve_compact_strided;
} lapse_resolve_compact;

#ifdef __cplusplus
}
#endif

#endif /* LAPSE_RESOLVE_COMPACT_H */
