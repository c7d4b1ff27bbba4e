/* lapse C ABI — the plugin descriptor and the entry point.
 *
 * A plugin file exports exactly one symbol, lapse_plugin_entry_v1. The host
 * calls it with its services; the plugin answers with a descriptor that
 * lives as long as the file stays loaded, or NULL after saying why through
 * host->log. The host checks abi_major, struct_size and that every required
 * function is present before it calls anything else.
 *
 * Thread annotations (as CLAP does):
 *   [thread-safe]   any thread, concurrently with any other [thread-safe] call
 *                   on the same device.
 *   [any thread]    any thread, but not concurrently with the calls it names.
 * A device's hot path (profile_start, profile_end, profile_abandon) takes no
 * global lock, does not allocate in the steady state and does not log.
 *
 * Growth: a minor version only appends fields at the end of a struct that
 * starts with struct_size, so the two sides of a call may disagree on its
 * size. A reader accepts any struct_size that reaches the end of the last
 * field it uses (a plugin of ABI 1.0 needs lapse_duration through
 * `failure`, lapse_device_info through `name`, lapse_end_options through
 * `flags`, lapse_error through `message`, lapse_host through the last
 * service it calls) and treats fields past the other side's struct_size as
 * absent. A writer writes no byte past the struct_size the reader set. An
 * array (resolve's `out`) is strided by out[0].struct_size, the caller's
 * size, never the plugin's sizeof. tests/abi_growth builds both sides
 * against a synthetic next minor and runs each against today's.
 */
#ifndef LAPSE_PLUGIN_H
#define LAPSE_PLUGIN_H

#include <stdint.h>

#include "host.h"
#include "status.h"
#include "version.h"
#include "window.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An open device, owned by the plugin. */
typedef struct lapse_device lapse_device;

/* Capabilities: static in the descriptor, refined per device by describe
 * (a Vulkan queue without timestamps has no device clock). Bits are only
 * appended. */
enum {
    /* Opens windows timed by its own clock; without it profile_start answers
     * LAPSE_NO_WINDOW and the caller falls back to system time. */
    LAPSE_CAP_DEVICE_CLOCK = 1u << 0,
    LAPSE_CAP_NESTED = 1u << 1,        /* a window may open inside another on one stream */
    LAPSE_CAP_OVERLAPPING = 1u << 2,   /* A opens, B opens, A closes, B closes */
    LAPSE_CAP_SPLIT_THREADS = 1u << 3, /* start and end may come from different threads */
    LAPSE_CAP_BATCHING = 1u << 4,      /* holds submitted work queued; honours LAPSE_END_FLUSH */
    /* At most one open window per stream: opening a second one fails with
     * LAPSE_ERROR_CAPACITY. The forward plugin lifts this. */
    LAPSE_CAP_SINGLE_WINDOW = 1u << 5,
    LAPSE_CAP_HOST_TIMELINE = 1u << 6  /* durations carry LAPSE_CLOCK_HOST_MONOTONIC */
};

/* sync: every stream of the device. */
#define LAPSE_ALL_STREAMS UINT32_MAX
/* resolve: wait as long as it takes. */
#define LAPSE_WAIT_FOREVER UINT64_MAX

typedef struct lapse_device_info {
    uint32_t struct_size;   /* set by the caller: sizeof(lapse_device_info) */
    uint32_t stream_count;  /* streams 0 .. stream_count-1 */
    uint64_t capabilities;  /* LAPSE_CAP_* for this device as opened */
    char name[128];         /* NUL-terminated, e.g. "llvmpipe (LLVM 15.0.6)" */
} lapse_device_info;

/* Work handed to a stream. `native` is the stream's native context: the
 * recording VkCommandBuffer on Vulkan, the CUstream on CUDA, NULL on a CPU
 * worker. Runs in stream order with the stream's windows. */
typedef void (*lapse_work_fn)(void* user, void* native);

typedef struct lapse_plugin {
    uint32_t struct_size;   /* sizeof(lapse_plugin) as the plugin was built */
    uint32_t abi_major;     /* LAPSE_ABI_MAJOR the plugin was built against */
    uint32_t abi_minor;     /* LAPSE_ABI_MINOR the plugin was built against */
    uint32_t reserved;      /* 0 */
    const char* name;        /* short, lowercase: "cpu", "vulkan" */
    const char* version;     /* the plugin's own version, e.g. "1.2.0" */
    const char* description; /* one line */
    uint64_t capabilities;   /* LAPSE_CAP_* it can offer at best */

    /* Opens a device from its config node. On success *out is set; on
     * failure it is left NULL and `error` says why (LAPSE_ERROR_UNAVAILABLE
     * when the hardware or driver is missing). [any thread] */
    lapse_status (*open)(const lapse_host* host, const lapse_config* config, lapse_device** out,
                         lapse_error* error);

    /* Closes a device: runs the work still submitted, abandons the windows
     * still open (and logs how many), frees everything. Cannot fail.
     * [any thread, once, after every other call on the device returned] */
    void (*close)(lapse_device* device);

    /* Runtime facts about the device. [thread-safe] */
    lapse_status (*describe)(lapse_device* device, lapse_device_info* out, lapse_error* error);

    /* Returns once every piece of work submitted to `stream` (or to every
     * stream, LAPSE_ALL_STREAMS) before the call has finished on the device.
     * A batching backend runs its queue first. [thread-safe] */
    lapse_status (*sync)(lapse_device* device, lapse_stream stream, lapse_error* error);

    /* Hands `fn(user, native)` to `stream`. On LAPSE_OK, fn is called exactly
     * once (also when the device closes first); on an error it is never
     * called and the caller still owns `user`. [thread-safe] */
    lapse_status (*submit)(lapse_device* device, lapse_stream stream, lapse_work_fn fn, void* user,
                           lapse_error* error);

    /* Opens a window at the current position of `stream`. LAPSE_OK fills
     * *token; LAPSE_NO_WINDOW means this stream has no clock (measure in
     * system time); an error means the window could not open. Does not
     * wait for the device. [thread-safe] */
    lapse_status (*profile_start)(lapse_device* device, lapse_stream stream, lapse_token* token,
                                  lapse_error* error);

    /* Closes the window at the current position of token.opened_on. Does not
     * wait: the duration is read later with resolve. Fails with
     * LAPSE_ERROR_INVALID_TOKEN (unknown, already closed, abandoned) or
     * LAPSE_ERROR_WRONG_STREAM. `options` may be NULL. [thread-safe; any
     * thread, not only the one that opened the window] */
    lapse_status (*profile_end)(lapse_device* device, lapse_token token,
                                const lapse_end_options* options, lapse_error* error);

    /* Forgets a window: open (closed without measuring) or closed and not
     * yet resolved. Unknown tokens are ignored. Cannot fail. [thread-safe] */
    void (*profile_abandon)(lapse_device* device, lapse_token token);

    /* Reads the durations of `count` closed windows, waiting up to
     * `timeout_ns` (0 polls, LAPSE_WAIT_FOREVER waits). Each out[i] gets a
     * final state (READY, NOT_MEASURED, FAILED) and its window is released,
     * or stays PENDING and may be resolved again. Returns LAPSE_OK when all
     * are final, LAPSE_NOT_READY when some are pending, or the first error
     * (an invalid token's out[i] reads FAILED with that status in
     * `failure`; the others are still resolved). The caller sets each
     * out[i].struct_size (one array, one size: a plugin may check out[0]
     * only) and the plugin never changes it, so an array set up once can be
     * resolved into again and again. [thread-safe] */
    lapse_status (*resolve)(lapse_device* device, const lapse_token* tokens, lapse_duration* out,
                            uint32_t count, uint64_t timeout_ns, lapse_error* error);

    /* An extension by id ("lapse.vulkan.commands/1"), or NULL. The returned
     * struct starts with struct_size and lives as long as the device.
     * [thread-safe] */
    const void* (*get_extension)(lapse_device* device, const char* id);
} lapse_plugin;

/* The entry point's type. `host` lives until the file is unloaded.
 * [called once per load, by the host, before anything else] */
typedef const lapse_plugin* (*lapse_plugin_entry_fn)(const lapse_host* host);

#ifdef __cplusplus
}
#endif

#endif /* LAPSE_PLUGIN_H */
