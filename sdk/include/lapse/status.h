/* lapse C ABI — statuses and the caller-owned error struct.
 *
 * Every call that can fail returns a lapse_status. Non-negative values are
 * answers (OK, "no window", "not ready yet"); negative values are errors. The
 * caller may pass a lapse_error to receive a message; it owns the memory, so
 * nothing allocated crosses the boundary. A null lapse_error is always allowed.
 */
#ifndef LAPSE_STATUS_H
#define LAPSE_STATUS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t lapse_status;

/* Values are only ever appended. */
enum {
    LAPSE_OK = 0,
    /* profile_start: this backend has no clock for that stream and opened no
     * window. Not an error: the caller measures in system time instead. */
    LAPSE_NO_WINDOW = 1,
    /* resolve: the timeout passed before every duration was ready. */
    LAPSE_NOT_READY = 2,

    LAPSE_ERROR_INVALID_ARGUMENT = -1, /* null pointer, bad stream index, bad flag */
    LAPSE_ERROR_INVALID_TOKEN = -2,    /* unknown, closed twice, abandoned, resolved twice */
    LAPSE_ERROR_WRONG_STREAM = -3,     /* token's opened_on does not match the window */
    LAPSE_ERROR_UNAVAILABLE = -4,      /* no driver, no device, stub library */
    LAPSE_ERROR_UNSUPPORTED = -5,      /* extension or operation not offered */
    LAPSE_ERROR_DEVICE = -6,           /* the device failed (lost, API error) */
    LAPSE_ERROR_OUT_OF_MEMORY = -7,
    LAPSE_ERROR_CAPACITY = -8,         /* a fixed-size resource is full (query ring) */
    LAPSE_ERROR_CONFIG = -9,           /* bad config value, type or key */
    LAPSE_ERROR_VERSION = -10,         /* ABI negotiation refused */
    LAPSE_ERROR_INTERNAL = -11,        /* a bug: exception caught at the boundary */
    LAPSE_ERROR_CLOSED = -12,          /* the device is closing or closed */
    LAPSE_ERROR_LOAD = -13             /* a plugin file could not be loaded */
};

#define LAPSE_ERROR_MESSAGE_CAPACITY 512

typedef struct lapse_error {
    uint32_t struct_size;   /* sizeof(lapse_error), set by the caller */
    lapse_status code;      /* same value as the call returned */
    /* NUL-terminated, truncated to fit. Names the call, the token, the file
     * or the key, and the cause. */
    char message[LAPSE_ERROR_MESSAGE_CAPACITY];
} lapse_error;

/* A short stable name for a status ("LAPSE_ERROR_INVALID_TOKEN"), or
 * "LAPSE_STATUS_UNKNOWN". Defined inline so the header needs no library.
 * [thread-safe] */
static inline const char* lapse_status_name(lapse_status status)
{
    switch (status) {
    case LAPSE_OK: return "LAPSE_OK";
    case LAPSE_NO_WINDOW: return "LAPSE_NO_WINDOW";
    case LAPSE_NOT_READY: return "LAPSE_NOT_READY";
    case LAPSE_ERROR_INVALID_ARGUMENT: return "LAPSE_ERROR_INVALID_ARGUMENT";
    case LAPSE_ERROR_INVALID_TOKEN: return "LAPSE_ERROR_INVALID_TOKEN";
    case LAPSE_ERROR_WRONG_STREAM: return "LAPSE_ERROR_WRONG_STREAM";
    case LAPSE_ERROR_UNAVAILABLE: return "LAPSE_ERROR_UNAVAILABLE";
    case LAPSE_ERROR_UNSUPPORTED: return "LAPSE_ERROR_UNSUPPORTED";
    case LAPSE_ERROR_DEVICE: return "LAPSE_ERROR_DEVICE";
    case LAPSE_ERROR_OUT_OF_MEMORY: return "LAPSE_ERROR_OUT_OF_MEMORY";
    case LAPSE_ERROR_CAPACITY: return "LAPSE_ERROR_CAPACITY";
    case LAPSE_ERROR_CONFIG: return "LAPSE_ERROR_CONFIG";
    case LAPSE_ERROR_VERSION: return "LAPSE_ERROR_VERSION";
    case LAPSE_ERROR_INTERNAL: return "LAPSE_ERROR_INTERNAL";
    case LAPSE_ERROR_CLOSED: return "LAPSE_ERROR_CLOSED";
    case LAPSE_ERROR_LOAD: return "LAPSE_ERROR_LOAD";
    default: return "LAPSE_STATUS_UNKNOWN";
    }
}

#ifdef __cplusplus
}
#endif

#endif /* LAPSE_STATUS_H */
