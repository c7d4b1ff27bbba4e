/* lapse C ABI — the services a host hands to every plugin.
 *
 * The host fills one lapse_host per loaded plugin file and keeps it alive
 * until that file is unloaded, so `log` knows whose message it is. Plugins
 * read their config and open stacked backends only through these services,
 * never by linking the host library: that is what lets a third party's
 * plugin stack and be stacked on.
 */
#ifndef LAPSE_HOST_H
#define LAPSE_HOST_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct lapse_plugin;
struct lapse_device;

/* A node (table) of the config, owned by the host: an opaque handle, never
 * dereferenced by a plugin. Valid until the `open` call it was handed to
 * returns (for a node from config_child: until the `open` that received its
 * root returns). After that, every service given the node answers
 * LAPSE_ERROR_INVALID_ARGUMENT with a message and reads nothing: keep what
 * you need from the config, not the node. */
typedef struct lapse_config lapse_config;

typedef enum lapse_log_level {
    LAPSE_LOG_TRACE = 0,
    LAPSE_LOG_DEBUG = 1,
    LAPSE_LOG_INFO = 2,
    LAPSE_LOG_WARN = 3,
    LAPSE_LOG_ERROR = 4
} lapse_log_level;

/* Another backend opened by the host on a plugin's behalf (stacking). The
 * caller owns this struct; the host fills it. Call through `plugin` with
 * `device`; give it back with close_backend. */
typedef struct lapse_backend {
    uint32_t struct_size;               /* sizeof(lapse_backend), set by the caller */
    uint32_t reserved;                  /* 0 */
    const struct lapse_plugin* plugin;  /* the inner plugin's descriptor */
    struct lapse_device* device;        /* the inner device */
    void* host_handle;                  /* the host's bookkeeping; do not touch */
} lapse_backend;

typedef struct lapse_host {
    uint32_t struct_size; /* sizeof(lapse_host) as the host was built */
    uint32_t abi_major;   /* LAPSE_ABI_MAJOR of the host */
    uint32_t abi_minor;   /* LAPSE_ABI_MINOR of the host */
    uint32_t reserved;    /* 0 */
    const char* host_name;  /* e.g. "lapse-core 0.1.0" */
    void* host_data;        /* the host's; do not touch */

    /* Writes one line into the host's log, prefixed with the plugin's name.
     * Never on the hot path (start, end, abandon). [thread-safe] */
    void (*log)(const struct lapse_host* host, lapse_log_level level, const char* message);

    /* Config access. `key` names a member of `node`. Absent keys yield the
     * default and LAPSE_OK; a present key of another type fails with
     * LAPSE_ERROR_CONFIG and a message carrying file, line and column.
     * Every key a plugin reads is marked known: after `open` succeeds the
     * host refuses keys the plugin never read (a typo must not be silently
     * ignored), so read every key you accept, whatever the mode.
     * A string from config_string lives as long as the node: copy it. A
     * string value holding a NUL character ("\u0000") is refused with
     * LAPSE_ERROR_CONFIG, never handed out as its prefix.
     * [any thread, during the `open` call that received `node`; after it,
     * LAPSE_ERROR_INVALID_ARGUMENT] */
    lapse_status (*config_string)(const struct lapse_host* host, const lapse_config* node,
                                  const char* key, const char* fallback, const char** out,
                                  lapse_error* error);
    lapse_status (*config_int)(const struct lapse_host* host, const lapse_config* node,
                               const char* key, int64_t fallback, int64_t* out, lapse_error* error);
    lapse_status (*config_double)(const struct lapse_host* host, const lapse_config* node,
                                  const char* key, double fallback, double* out, lapse_error* error);
    lapse_status (*config_bool)(const struct lapse_host* host, const lapse_config* node,
                                const char* key, int fallback, int* out, lapse_error* error);
    /* A child table; *out is NULL when absent. */
    lapse_status (*config_child)(const struct lapse_host* host, const lapse_config* node,
                                 const char* key, const lapse_config** out, lapse_error* error);
    /* Fills `error` with "<file>:<line>:<col>: <key>: <message>" for `key` of
     * `node` (or the node itself when key is NULL) and returns
     * LAPSE_ERROR_CONFIG: for values of the right type but out of range. */
    lapse_status (*config_error)(const struct lapse_host* host, const lapse_config* node,
                                 const char* key, const char* message, lapse_error* error);

    /* Opens the backend that `node` names (its `plugin` key), loading that
     * plugin file if needed and keeping it loaded until close_backend.
     * Refuses cycles. Errors name every layer on the way down. `out` may be
     * longer than this host's lapse_backend (a later minor); the host fills
     * the fields it knows and leaves the rest.
     * [any thread, during the `open` call that received `node` (a stacking
     * plugin opens its inner backend while it opens); after that open
     * returned the node is gone and this answers
     * LAPSE_ERROR_INVALID_ARGUMENT] */
    lapse_status (*open_backend)(const struct lapse_host* host, const lapse_config* node,
                                 lapse_backend* out, lapse_error* error);
    /* Closes a backend from open_backend. Cannot fail. [any thread, at any
     * time after open_backend: the inner device outlives the node] */
    void (*close_backend)(const struct lapse_host* host, lapse_backend* backend);

    /* The host's monotonic clock (CLOCK_MONOTONIC), in ns. [thread-safe] */
    int64_t (*clock_ns)(const struct lapse_host* host);
} lapse_host;

#ifdef __cplusplus
}
#endif

#endif /* LAPSE_HOST_H */
