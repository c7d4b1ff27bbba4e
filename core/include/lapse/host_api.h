/* lapse C host API — open devices and time windows from C (or any language
 * that binds C: Rust through bindgen, Python through cffi, Zig, Go).
 *
 *   lapse_host_runtime* rt;  lapse_host_config* cfg;  lapse_host_device* dev;
 *   lapse_error err = {sizeof err, 0, ""};
 *   lapse_host_runtime_create(NULL, &rt, &err);
 *   lapse_host_config_default(&cfg, &err);     // LAPSE_CONFIG, else the builtin one
 *   lapse_host_open(rt, cfg, &dev, &err);
 *   lapse_host_window w;  lapse_host_duration d;  lapse_duration out;
 *   lapse_host_profile_start(dev, 0, NULL, &w, &err);
 *   lapse_host_submit(dev, 0, work, user, NULL, &err);
 *   lapse_host_profile_end(dev, &w, 0, &d, &err);
 *   if (lapse_host_duration_resolve(&d, LAPSE_WAIT_FOREVER, &out, &err) == LAPSE_OK &&
 *       out.state == LAPSE_DURATION_READY) printf("%lld ns\n", (long long)(out.end_ns - out.start_ns));
 *   lapse_host_duration_release(&d);
 *   lapse_host_device_destroy(dev); lapse_host_config_destroy(cfg); lapse_host_runtime_destroy(rt);
 *
 * A thin layer over the C++ API (lapse/core.hpp) in liblapse_core.so: every
 * rule of the C++ API holds here (system-time fallback, run-anyway when a
 * window cannot open, "not measured" is not zero), and no exception ever
 * crosses: each call that can fail returns a lapse_status and, when the
 * caller passes a lapse_error (it may pass NULL), a message naming the
 * call, the file, key or window, and the cause. The lapse_error is written
 * on failure only, so one struct may serve a whole run of calls.
 *
 * Handles (runtime, config, device) are opaque and heap-allocated by the
 * library. Windows and durations are caller-owned VALUE types with opaque
 * contents, so that the hot path (profile_start, profile_end) allocates
 * nothing: put them on the stack or in your own arrays. Like lapse_token,
 * they are frozen (no struct_size: they cross on the hot path, and their
 * size is part of this header's version). Every other struct that crosses
 * starts with struct_size, set by the caller.
 *
 * Ownership of windows and durations:
 *   - a window from profile_start is open until profile_end or
 *     profile_abandon; an all-zero window is a closed one;
 *   - a duration from profile_end or profile holds its window until it is
 *     resolved, abandoned or released; call lapse_host_duration_release on
 *     every duration you got (a no-op for a resolved unnamed one) or
 *     the window's memory and name leak;
 *   - they may be moved by memcpy (then forget the original) but must not
 *     be duplicated: two copies own one window;
 *   - an out parameter of these types is written without being read: release
 *     what it held first.
 *
 * Thread annotations (as in lapse/plugin.h):
 *   [thread-safe]  any thread, concurrently with any other [thread-safe]
 *                  call on the same handle;
 *   [any thread]   any thread, but not concurrently with the calls it names.
 * One window or duration is used by one thread at a time; a window may be
 * ended on another thread than the one that opened it.
 */
#ifndef LAPSE_HOST_API_H
#define LAPSE_HOST_API_H

#include <stddef.h>
#include <stdint.h>

#include <lapse/status.h> /* before window.h, which uses lapse_status */
#include <lapse/host.h>
#include <lapse/plugin.h>
#include <lapse/window.h>

#if defined(_WIN32)
#define LAPSE_HOST_API
#else
#define LAPSE_HOST_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Grows when functions are appended (2: captures, open_default; 3: interned names); a change to the
 * frozen value types below would be a new major (a new header). */
#define LAPSE_HOST_API_VERSION 3

/* LAPSE_HOST_API_VERSION of the library actually loaded. [thread-safe] */
LAPSE_HOST_API uint32_t lapse_host_api_version(void);

/* ---- handles ------------------------------------------------------------ */

typedef struct lapse_host_runtime lapse_host_runtime; /* loads plugins, opens devices */
typedef struct lapse_host_config lapse_host_config;   /* a parsed TOML config */
typedef struct lapse_host_device lapse_host_device;   /* an open device */

/* ---- runtime ------------------------------------------------------------ */

/* One line of the runtime's log: the core's own messages and the plugins'
 * ("[cpu] ..."). `message` is valid during the call only. Called from any
 * thread that logs, one call at a time per runtime. */
typedef void (*lapse_host_log_fn)(void* user, lapse_log_level level, const char* message);

typedef struct lapse_host_runtime_options {
    uint32_t struct_size;       /* sizeof(lapse_host_runtime_options) */
    uint32_t search_path_count; /* entries in search_paths */
    /* Searched before the config's search_paths (after LAPSE_PLUGIN_PATH).
     * Copied: the caller may free them after the call. */
    const char* const* search_paths;
    /* NULL: the default logger, on stderr. */
    lapse_host_log_fn log;
    void* log_user;
    int32_t log_level; /* lapse_log_level: the lowest level passed to `log` */
    uint32_t reserved; /* 0 */
} lapse_host_runtime_options;

/* `options` may be NULL (defaults). On success *out is set; on failure it
 * is left NULL. [any thread] */
LAPSE_HOST_API lapse_status lapse_host_runtime_create(const lapse_host_runtime_options* options,
                                                      lapse_host_runtime** out, lapse_error* error);
/* Devices keep what they need: a runtime may be destroyed before the
 * devices it opened. NULL is ignored. [any thread, once, after every other
 * call on this runtime returned] */
LAPSE_HOST_API void lapse_host_runtime_destroy(lapse_host_runtime* runtime);

/* ---- configs ------------------------------------------------------------ */

/* Parse errors answer LAPSE_ERROR_CONFIG with "<file>:<line>:<col>: <cause>".
 * A config is immutable: it may be used from several threads at once.
 * [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_config_from_file(const char* path, lapse_host_config** out,
                                                        lapse_error* error);
/* `source_name` stands for the file name in messages (NULL: "<string>");
 * `base_dir` resolves relative paths (NULL: the working directory).
 * [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_config_from_string(const char* text, const char* source_name,
                                                          const char* base_dir, lapse_host_config** out,
                                                          lapse_error* error);
/* The embedded default: the CPU plugin with 2 streams. [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_config_builtin(lapse_host_config** out, lapse_error* error);
/* The file named by the environment variable LAPSE_CONFIG when it is set
 * and not empty (read at the call; its errors are prefixed
 * "LAPSE_CONFIG=<path>: "), else the builtin config: the core's
 * lapse::default_config(). [thread-safe, while nothing changes the
 * environment] */
LAPSE_HOST_API lapse_status lapse_host_config_default(lapse_host_config** out, lapse_error* error);
/* NULL is ignored. [any thread, after every other call on it returned] */
LAPSE_HOST_API void lapse_host_config_destroy(lapse_host_config* config);

/* ---- devices ------------------------------------------------------------ */

/* Opens the device the config's [backend] table names. Failures name the
 * file, key and every layer of a stack. [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_open(lapse_host_runtime* runtime, const lapse_host_config* config,
                                            lapse_host_device** out, lapse_error* error);

/* Opens the default config (lapse_host_config_default, with LAPSE_CONFIG
 * as it stood when the runtime was created); with LAPSE_DISABLE=1, a
 * device whose windows are no-ops. [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_open_default(lapse_host_runtime* runtime, lapse_host_device** out,
                                                    lapse_error* error);

/* Closes the device: the backend runs the submitted work and abandons the
 * windows still open. Every duration of the device must be final,
 * abandoned or released first (as in the C++ API). The handle stays valid:
 * every later call answers LAPSE_ERROR_CLOSED (profile_start gives a
 * FAILED window, submit and sync refuse). Idempotent; cannot fail. [any
 * thread, after every other call on the device returned] */
LAPSE_HOST_API void lapse_host_device_close(lapse_host_device* device);
/* Closes (if still open) and frees the handle. NULL is ignored. Every
 * window and duration of the device must be ended, resolved, abandoned or
 * released first. [any thread, once, after every other call returned] */
LAPSE_HOST_API void lapse_host_device_destroy(lapse_host_device* device);

typedef struct lapse_host_device_info {
    uint32_t struct_size;  /* set by the caller: sizeof(lapse_host_device_info) */
    uint32_t stream_count; /* streams 0 .. stream_count-1 */
    uint64_t capabilities; /* LAPSE_CAP_* as opened */
    /* NUL-terminated, owned by the device, valid until it is closed. */
    const char* name;           /* the device's name from describe */
    const char* plugin;         /* the top plugin's name, e.g. "forward" */
    const char* plugin_version;
    const char* plugin_file;    /* the file it was loaded from */
} lapse_host_device_info;

/* [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_device_describe(const lapse_host_device* device,
                                                       lapse_host_device_info* out, lapse_error* error);

/* Hands fn(user, native) to `stream`, run exactly once in stream order
 * (native: the recording VkCommandBuffer, the CUstream, NULL on a CPU
 * worker). `destroy`, when not NULL, is called exactly once when lapse is
 * done with `user`: after fn ran, or, when the work is refused (the call
 * returns an error and fn never runs), before the call returns.
 * [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_submit(lapse_host_device* device, lapse_stream stream, lapse_work_fn fn,
                                              void* user, void (*destroy)(void* user), lapse_error* error);
/* Waits until the work submitted to `stream` (LAPSE_ALL_STREAMS: every
 * stream) before the call has finished. [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_sync(lapse_host_device* device, lapse_stream stream, lapse_error* error);

/* ---- windows (the hot path) --------------------------------------------- */

/* An open window: a device window (a token), a system-time window (the
 * backend has no clock for the stream: the start was synced and read from
 * the host clock), or a window that could not open (it holds the error;
 * ending it gives a FAILED duration). Frozen; contents private. */
typedef struct lapse_host_window {
    uint64_t opaque[8];
} lapse_host_window;

/* What a closed window measured, resolved later. Frozen; contents private.
 * Not valid zero-filled: set one up with lapse_host_duration_init, or let
 * profile_end / profile write it. */
typedef struct lapse_host_duration {
    uint64_t opaque[5];
} lapse_host_duration;

typedef enum lapse_host_window_kind {
    LAPSE_HOST_WINDOW_CLOSED = 0, /* ended, abandoned, or never opened */
    LAPSE_HOST_WINDOW_DEVICE = 1, /* timed by the device's clock */
    LAPSE_HOST_WINDOW_SYSTEM = 2, /* timed by the host clock around syncs */
    LAPSE_HOST_WINDOW_FAILED = 3  /* could not open; ending it reports why */
} lapse_host_window_kind;

/* Opens a window on `stream` into *out. `name` (NULL or "" for none) is
 * recorded with the window when the device records a session; a named
 * window allocates its name, an unnamed one allocates nothing. Always
 * writes an open window into *out, also when it cannot open: the return is
 * then that error (with its message), and ending the window reports it
 * again, so the caller's work may run regardless. [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_profile_start(lapse_host_device* device, lapse_stream stream,
                                                     const char* name, lapse_host_window* out,
                                                     lapse_error* error);
/* A window name interned once, for names known ahead (as Tracy's static
 * source locations are): a window opened with it copies no text, and a
 * capture finds it in its string table without hashing the text. Every
 * distinct text interned stays in memory until the process exits, so
 * intern a fixed set of names (statics), never one per window. Contents
 * private; valid for the life of the process. */
typedef struct lapse_host_name lapse_host_name;

/* The one entry of `text` into *out, made on first use (interning a text
 * again gives the same entry). NULL or "" gives NULL, which names nothing.
 * LAPSE_ERROR_OUT_OF_MEMORY when the entry cannot be made. [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_name_intern(const char* text, const lapse_host_name** out,
                                                   lapse_error* error);
/* lapse_host_profile_start with the window named by `name` (NULL: an
 * unnamed window). The window records the name's text, as a window named
 * by that text would. [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_profile_start_named(lapse_host_device* device, lapse_stream stream,
                                                           const lapse_host_name* name, lapse_host_window* out,
                                                           lapse_error* error);

/* Closes *window (on its own stream, from any thread) into *out and leaves
 * the window closed. `flags`: LAPSE_END_* (LAPSE_END_FLUSH makes a
 * batching backend run its queue first). Returns LAPSE_OK with a pending
 * (device) or ready (system time) duration, or the error that hit the
 * window (closed twice, another device's window, a window that could not
 * open, a closed device); *out then reads FAILED with that status, and the
 * window is released, never left open. [thread-safe; the window by one
 * thread at a time] */
LAPSE_HOST_API lapse_status lapse_host_profile_end(lapse_host_device* device, lapse_host_window* window,
                                                   uint32_t flags, lapse_host_duration* out, lapse_error* error);
/* Gives an open window up without measuring; leaves it closed. Cannot
 * fail; a closed window is ignored. [thread-safe] */
LAPSE_HOST_API void lapse_host_profile_abandon(lapse_host_device* device, lapse_host_window* window);

/* LAPSE_HOST_WINDOW_* of a window. [thread-safe] */
LAPSE_HOST_API lapse_host_window_kind lapse_host_window_kind_of(const lapse_host_window* window);
/* The backend's token of a device window (for the raw C ABI, e.g. a
 * Vulkan host's own command buffers); LAPSE_ERROR_INVALID_ARGUMENT for
 * any other kind. [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_window_token(const lapse_host_window* window, lapse_token* out,
                                                    lapse_error* error);

/* The closure form. Returning LAPSE_OK measures the window; any other
 * status abandons it (the window is closed without measuring, *out reads
 * not measured) and profile returns that status. */
typedef lapse_status (*lapse_host_closure_fn)(void* user);

typedef struct lapse_host_profile_options {
    uint32_t struct_size; /* sizeof(lapse_host_profile_options) */
    uint32_t flags;       /* LAPSE_END_* for the window's end */
    const char* name;     /* NULL or "": an unnamed window */
} lapse_host_profile_options;

/* Opens a window on `stream`, runs closure(user) on the calling thread,
 * and closes the window into *out: the design's closure-bracketed helper.
 * The closure runs also when the window cannot open (*out then reads
 * FAILED and the return is that error). `options` may be NULL.
 * [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_profile(lapse_host_device* device, lapse_stream stream,
                                               lapse_host_closure_fn closure, void* user,
                                               const lapse_host_profile_options* options,
                                               lapse_host_duration* out, lapse_error* error);

/* ---- durations ---------------------------------------------------------- */

/* Sets *duration to "not measured", owning nothing. [thread-safe] */
LAPSE_HOST_API void lapse_host_duration_init(lapse_host_duration* duration);

/* Reads a duration into `out` (may be NULL; the caller sets
 * out->struct_size), waiting up to `timeout_ns` for the device (0 polls,
 * LAPSE_WAIT_FOREVER waits). Returns LAPSE_OK once final (out->state:
 * READY with start_ns/end_ns and the method, or NOT_MEASURED: no number,
 * which is not zero), LAPSE_NOT_READY while pending, or the status of a
 * FAILED duration with its message. Asking again after a final state
 * answers the same. [thread-safe; the duration by one thread at a time] */
LAPSE_HOST_API lapse_status lapse_host_duration_resolve(lapse_host_duration* duration, uint64_t timeout_ns,
                                                        lapse_duration* out, lapse_error* error);

/* Resolves `count` durations of any devices with one plugin call per
 * device and 128 durations, waiting up to `timeout_ns`. `out` (may be NULL) gets `count`
 * entries; the caller sets out[0].struct_size (one array, one size) and
 * it is copied to every entry. Returns LAPSE_OK when all are final and
 * none failed, LAPSE_NOT_READY when some are still pending, else the first
 * failure's status with its index and message. [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_resolve(lapse_host_device* device, lapse_host_duration* durations,
                                               uint32_t count, uint64_t timeout_ns, lapse_duration* out,
                                               lapse_error* error);

/* Gives a pending duration up without reading it: it reads "not measured"
 * afterwards. Cannot fail. [thread-safe] */
LAPSE_HOST_API void lapse_host_duration_abandon(lapse_host_duration* duration);
/* Frees what a duration holds (its window while pending, its name and
 * message) and leaves it "not measured". Call it on every duration before
 * its memory goes. [thread-safe] */
LAPSE_HOST_API void lapse_host_duration_release(lapse_host_duration* duration);

/* ---- captures: every named window of a run, in a file --------------------
 *
 * While a device records into a capture, every named window it closes is
 * recorded exactly once, whether its duration is resolved, kept or released
 * unread: a collector thread resolves what the caller did not and appends
 * it to the file in checksummed chunks (docs/capture-format.md). Unnamed
 * windows, and windows abandoned (a closure that declined, profile_abandon),
 * are not recorded. Memory is bounded by `budget_bytes`; past it the
 * policy drops windows (counted per name, in the file) or blocks the
 * closing thread. The environment variable LAPSE_CAPTURE=path, read when a
 * runtime is created, records every device it opens (one file per process).
 *
 *   lapse_host_capture_options o = {sizeof o};
 *   o.path = "run.lapse-capture";
 *   lapse_host_capture_open(&o, &cap, &err);
 *   lapse_host_device_record_into(dev, cap, &err);  // or lapse_host_runtime_record_into
 *   ... named windows ...
 *   lapse_host_capture_close(cap);                  // the end chunk: a complete file
 *   lapse_host_capture_destroy(cap);
 */

typedef struct lapse_host_capture lapse_host_capture;               /* a capture being written */
typedef struct lapse_host_capture_reader lapse_host_capture_reader; /* a capture file being read */

typedef enum lapse_host_capture_policy {
    LAPSE_HOST_CAPTURE_DROP = 0, /* past the budget, drop windows and count them per name */
    LAPSE_HOST_CAPTURE_BLOCK = 1 /* past the budget, the closing thread waits for room */
} lapse_host_capture_policy;

typedef struct lapse_host_capture_options {
    uint32_t struct_size;  /* sizeof(lapse_host_capture_options) */
    uint32_t policy;       /* lapse_host_capture_policy */
    const char* path;      /* the file, created or truncated; copied */
    uint64_t budget_bytes; /* windows queued or still unresolved, at most; 0: 4 MiB */
    uint32_t flush_ms;     /* at most this long between chunk writes; 0: 100 */
    uint32_t reserved;     /* 0 */
} lapse_host_capture_options;

/* Opens the file, writes its header and starts the collector. A file that
 * cannot be created answers an error naming the path and the cause.
 * [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_capture_open(const lapse_host_capture_options* options,
                                                    lapse_host_capture** out, lapse_error* error);
/* The capture the runtime's devices record into by default (set by
 * lapse_host_runtime_record_into, or LAPSE_CAPTURE's), as a new handle;
 * *out is NULL when there is none. [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_runtime_capture(lapse_host_runtime* runtime, lapse_host_capture** out,
                                                       lapse_error* error);
/* Every device the runtime opens from now on records into `capture`
 * (overriding LAPSE_CAPTURE and a config's [capture] table); NULL returns
 * to those. Devices already open are not changed. [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_runtime_record_into(lapse_host_runtime* runtime, lapse_host_capture* capture,
                                                           lapse_error* error);
/* Every named window the device closes from now on goes into `capture`;
 * NULL stops. The previous capture first gets the device's windows still
 * pending. LAPSE_ERROR_CLOSED on a closed device. [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_device_record_into(lapse_host_device* device, lapse_host_capture* capture,
                                                          lapse_error* error);
/* Writes what is queued and resolved now as one chunk, and waits for it.
 * [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_capture_flush(lapse_host_capture* capture, lapse_error* error);

typedef struct lapse_host_capture_stats {
    uint32_t struct_size; /* set by the caller: sizeof(lapse_host_capture_stats) */
    uint32_t reserved;
    uint64_t recorded;        /* windows written into chunks */
    uint64_t dropped;         /* windows dropped by the policy (or after close) */
    uint64_t queued;          /* handed to the collector, not yet written */
    uint64_t bytes_written;   /* file bytes */
    uint64_t chunks;
    uint64_t peak_held_bytes; /* the most memory ever held (at most budget_bytes) */
    uint64_t budget_bytes;
} lapse_host_capture_stats;

/* Counters since the capture opened. [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_capture_stats_of(const lapse_host_capture* capture,
                                                        lapse_host_capture_stats* out, lapse_error* error);
/* Drains every queued window (resolving what is pending), writes the end
 * chunk and stops the collector: the file is complete. Devices that still
 * record into it drop their windows (counted). Idempotent; cannot fail.
 * [thread-safe] */
LAPSE_HOST_API void lapse_host_capture_close(lapse_host_capture* capture);
/* Lets go of the handle. Devices and runtimes recording into the capture
 * keep it open; it closes when the last of them lets go. NULL is ignored.
 * [any thread, once, after every other call on this handle returned] */
LAPSE_HOST_API void lapse_host_capture_destroy(lapse_host_capture* capture);

/* Reading a capture: one window at a time, in constant memory. A damaged
 * chunk (its checksum fails) is counted and skipped, never read as data. */

/* A file that cannot be opened or is not a capture answers
 * LAPSE_ERROR_INVALID_ARGUMENT naming the file. [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_capture_reader_open(const char* path, lapse_host_capture_reader** out,
                                                           lapse_error* error);

typedef struct lapse_host_captured_window {
    uint32_t struct_size;  /* set by the caller: sizeof(lapse_host_captured_window) */
    uint32_t source;       /* which device (in order of first appearance, from 0) */
    lapse_stream stream;
    uint32_t state;        /* lapse_duration_state: READY, NOT_MEASURED or FAILED */
    uint32_t method;       /* lapse_timing_method */
    uint32_t clock_domain; /* lapse_clock_domain of start_ns / end_ns */
    int64_t start_ns;      /* when READY */
    int64_t end_ns;
    lapse_status failure;  /* when FAILED */
    uint32_t reserved;
    uint64_t flags;        /* LAPSE_DURATION_* of a READY window */
    uint64_t thread;       /* the OS thread that opened the window */
    uint64_t close_thread; /* the OS thread that closed it */
    /* NUL-terminated, owned by the reader, valid until its next call. */
    const char* name;
    const char* cause;     /* why it failed or was not measured; "" when unknown */
} lapse_host_captured_window;

/* The next window into *out: *found is 1, or 0 at the end of the file.
 * [one thread at a time per reader] */
LAPSE_HOST_API lapse_status lapse_host_capture_reader_next(lapse_host_capture_reader* reader,
                                                           lapse_host_captured_window* out, int* found,
                                                           lapse_error* error);

typedef struct lapse_host_capture_summary {
    uint32_t struct_size;   /* set by the caller: sizeof(lapse_host_capture_summary) */
    uint32_t complete;      /* 1: the end chunk was read (closed, not cut short) */
    uint64_t windows_read;
    uint64_t chunks_read;
    uint64_t dropped_total; /* windows the policy dropped, all names */
    uint64_t damaged_bytes; /* bytes skipped as damage */
    uint32_t damage_count;  /* damaged ranges */
    uint32_t source_count;  /* devices seen */
} lapse_host_capture_summary;

/* What the reader saw so far; final once next() answered *found = 0.
 * [one thread at a time per reader] */
LAPSE_HOST_API lapse_status lapse_host_capture_reader_summary(const lapse_host_capture_reader* reader,
                                                              lapse_host_capture_summary* out, lapse_error* error);
/* NULL is ignored. [any thread, once, after every other call on it returned] */
LAPSE_HOST_API void lapse_host_capture_reader_destroy(lapse_host_capture_reader* reader);

/* ---- backend extensions and the raw C ABI (the Vulkan attach path) ------- */

/* A backend extension by id, or NULL (also on a closed device). With
 * "lapse.vulkan.commands/1" (lapse/vulkan.h) a Vulkan host attaches its own
 * queues and writes window stamps into its own command buffers; it calls
 * those functions with the raw device from lapse_host_device_raw, and
 * resolves their tokens through the raw plugin's resolve. [thread-safe] */
LAPSE_HOST_API const void* lapse_host_device_extension(const lapse_host_device* device, const char* id);
/* The plugin descriptor and device under this handle, valid until the
 * device is closed. LAPSE_ERROR_CLOSED on a closed device. [thread-safe] */
LAPSE_HOST_API lapse_status lapse_host_device_raw(const lapse_host_device* device, const lapse_plugin** plugin,
                                                  lapse_device** raw_device, lapse_error* error);

#ifdef __cplusplus
}
#endif

#endif /* LAPSE_HOST_API_H */
