/* lapse C ABI — window dispatch: a layer that steps out of the window path.
 *
 * A layer stacked on another backend (forward) often adds nothing to a
 * window's start, end or abandon: over a backend that already nests,
 * overlaps and stamps every stream, its tokens are the inner backend's own
 * and each call only forwards. Such a device offers the extension below,
 * and a caller may then make those three calls on the target directly, as
 * the Vulkan loader calls past a layer for the commands it does not
 * intercept. A stack of such layers then costs nothing per window.
 *
 * Tokens are shared: a token from the target's profile_start is a token of
 * this device (for profile_end, profile_abandon and resolve), and the other
 * way round. Everything else (describe, sync, submit, resolve, extensions,
 * close) still goes through this device.
 *
 * What a caller gives up by calling past the layer: the layer's name in
 * error messages of those three calls, and the layer's own reading of an
 * unexpected LAPSE_NO_WINDOW (the caller must treat it as on any backend:
 * measure in system time, with syncs through this device).
 *
 * A layer offers the extension only when it holds for every stream and for
 * the device's whole life, and points at the end of the chain: when its
 * inner device offers it too, the layer hands on the inner one's target, so
 * one query collapses a whole stack.
 */
#ifndef LAPSE_DISPATCH_H
#define LAPSE_DISPATCH_H

#include <stdint.h>

#include "plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LAPSE_WINDOW_DISPATCH_EXTENSION "lapse.window_dispatch/1"

/* get_extension(device, LAPSE_WINDOW_DISPATCH_EXTENSION) returns this, or
 * NULL when the device's windows are its own. Lives as long as the device.
 * [read from any thread] */
typedef struct lapse_window_dispatch {
    uint32_t struct_size; /* sizeof(lapse_window_dispatch) as the plugin was built */
    uint32_t reserved;    /* 0 */
    /* Where profile_start, profile_end and profile_abandon may be called
     * instead; both non-null, and valid until this device is closed. */
    const lapse_plugin* plugin;
    lapse_device* device;
} lapse_window_dispatch;

#ifdef __cplusplus
}
#endif

#endif /* LAPSE_DISPATCH_H */
