/* Compiled with -std=c99 -pedantic -Werror: the ABI must stay plain C. */
#include <lapse/lapse.h>

#include <stddef.h>
#include <stdio.h>

int main(void)
{
    lapse_token token = {1u, 0u, 0u};
    lapse_duration duration;
    lapse_error error;
    duration.struct_size = sizeof duration;
    error.struct_size = sizeof error;
    /* Frozen layouts: growing them breaks every plugin already built. */
    if (sizeof(lapse_token) != 16 || offsetof(lapse_duration, start_ns) != 16) {
        printf("ABI layout changed\n");
        return 1;
    }
    /* flags and queued_ops took the place of a 32-bit reserved field: the
     * struct keeps its 40 bytes and every older field its offset. */
    if (sizeof(lapse_duration) != 40 || offsetof(lapse_duration, failure) != 32 ||
        offsetof(lapse_duration, flags) != 36 || offsetof(lapse_duration, queued_ops) != 38) {
        printf("lapse_duration layout changed\n");
        return 1;
    }
    duration.flags = LAPSE_DURATION_WORK_QUEUED | LAPSE_DURATION_HOLDS_EARLIER_WORK;
    duration.queued_ops = LAPSE_DURATION_QUEUED_OPS_MAX;
    if (duration.flags != 3u || duration.queued_ops != 65535u) return 1;
    if (offsetof(lapse_plugin, open) <= offsetof(lapse_plugin, capabilities)) return 1;
    if (offsetof(lapse_window_dispatch, plugin) != 8 || sizeof(lapse_window_dispatch) != 8 + 2 * sizeof(void*)) {
        printf("lapse_window_dispatch layout changed\n");
        return 1;
    }
    /* lapse.resolve_compact/1: the pair is frozen at 16 bytes (its density
     * is the point), the extension struct grows only at its end. */
    if (sizeof(lapse_stamp_pair) != 16 || offsetof(lapse_stamp_pair, end_ns) != 8 ||
        offsetof(lapse_resolve_compact, resolve_compact) != 16 ||
        offsetof(lapse_resolve_compact, resolve_compact_strided) != 16 + sizeof(void*) || LAPSE_COMPACT_PENDING != 0 ||
        LAPSE_COMPACT_READY != 1 || LAPSE_COMPACT_RESOLVE_FULL != 2 || LAPSE_COMPACT_NO_STAMP != INT64_MIN) {
        printf("lapse_resolve_compact layout changed\n");
        return 1;
    }
    printf("%s %s %u\n", LAPSE_ENTRY_SYMBOL, lapse_status_name(LAPSE_ERROR_INVALID_TOKEN), (unsigned)token.id);
    return 0;
}
