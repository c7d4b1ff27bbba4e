/* TEST DOUBLE — fake_cuda_driver: controls for the fake CUDA driver.
 *
 * libfake_cuda_driver.so is NOT a CUDA driver. It is a test double that
 * exports the handful of driver entry points lapse_cuda uses (cuInit,
 * cuEventRecord, cuGetProcAddress_v2, ...) with host-side semantics, so
 * the plugin's logic — event pool, deferred resolve, anchor placement,
 * opened_on checks, error poisoning, stream registration — runs for real in
 * CI on machines without a GPU. It is loaded only through the plugin's
 * `driver` config path, lives only in the build tree of tests/cuda, and is
 * never installed.
 *
 * Model: a stream is an in-order queue with a cursor on the host's
 * CLOCK_MONOTONIC. A "kernel" (fake_cuda_launch_busy) moves the cursor
 * `ns` past max(now, cursor); an event recorded on a stream is stamped at
 * max(now, cursor) and completes when the host clock reaches its stamp. A
 * held stream (fake_cuda_hold) queues everything until fake_cuda_release,
 * like a stream blocked behind work of unknown length.
 *
 * What it models of the documented driver, so that the suite tests the
 * plugin's handling rather than the double's kindness:
 *  - cuEventElapsedTime reads a device clock of its own: another epoch, a
 *    drift against the host clock (fake_cuda_set_clock; 20 ppm fast by
 *    default) and a 0.5 us resolution; the result is an f32.
 *  - Host functions (cuLaunchHostFunc) run on one driver thread, never on
 *    the caller's, in stream order, one after another across streams; after
 *    a context error (the sticky error) they are never called.
 *  - cuGetProcAddress_v2 answers CUDA_ERROR_INVALID_VALUE to a version
 *    newer than the driver's (fake_cuda_set_driver_version).
 *  - The legacy default stream (NULL or CU_STREAM_LEGACY) of a context
 *    waits for the work of its blocking streams before each of its own ops,
 *    and they for it; non-blocking streams are independent of it. (Only
 *    work already past a hold counts.) CU_STREAM_PER_THREAD is not modelled.
 *  - A stream capture (fake_cuda_set_capturing): records, kernels and host
 *    functions on a capturing stream go into the graph, not to the device;
 *    an event last recorded in a capture answers CUDA_ERROR_CAPTURED_EVENT.
 *  - NVML's MIG report (nvmlDeviceGetMigMode), from fake_cuda_set_nvml.
 *
 * A program that does not link the controls (the GPU program run over the
 * double) sets what cuInit answers with FAKE_CUDA_INIT_RESULT=<code>.
 *
 * The test program links this library and the plugin dlopens the same file
 * by path, so both see one instance and these controls reach the driver the
 * plugin is using.
 */
#ifndef LAPSE_TESTS_FAKE_CUDA_DRIVER_H
#define LAPSE_TESTS_FAKE_CUDA_DRIVER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct CUstream_st;
struct CUctx_st;

/* Back to a fresh driver: 1 device, cuInit succeeds, no injected failures,
 * driver version 13000, the default clock, NVML: 1 GPU without MIG.
 * Fails the test (returns non-zero) if objects from a previous test are
 * still alive. */
int fake_cuda_reset(void);

void fake_cuda_set_device_count(int count);
/* What cuInit answers (0 = CUDA_SUCCESS, 100 = CUDA_ERROR_NO_DEVICE, ...). */
void fake_cuda_set_init_result(int result);
/* Hide cuGetProcAddress_v2 (answers CUDA_ERROR_NOT_FOUND), so the plugin
 * must fall back to exact exported names. */
void fake_cuda_hide_get_proc_address(int hide);

/* What cuDriverGetVersion answers (e.g. 12040). */
void fake_cuda_set_driver_version(int version);
/* NVML's view: `gpus` GPUs, `mig_enabled` of them with MIG mode on. */
void fake_cuda_set_nvml(int gpus, int mig_enabled);
/* The device clock's drift against the host clock and its resolution. */
void fake_cuda_set_clock(double drift_ppm, int64_t resolution_ns);
/* While on, every cuEventSynchronize blocks (a stream sharing a hardware
 * queue with busy work) until turned off. */
void fake_cuda_stall_event_synchronize(int on);
/* Starts / ends a stream capture on `stream`. */
void fake_cuda_set_capturing(struct CUstream_st* stream, int on);
/* Non-zero when called from the driver's host-function thread. */
int fake_cuda_on_host_function_thread(void);

/* The next `times` calls of `call` ("cuEventRecord", ...) fail with
 * `result`. */
void fake_cuda_fail_next(const char* call, int result, int times);
/* Every call from now on fails with `result` (a sticky context error like
 * CUDA_ERROR_ILLEGAL_ADDRESS, 700); 0 clears it. */
void fake_cuda_set_sticky_error(int result);

/* Work of a known length on `stream` (the kernel the host would launch);
 * NULL or CU_STREAM_LEGACY (1) is the legacy default stream of the
 * current context. */
int fake_cuda_launch_busy(struct CUstream_st* stream, int64_t ns);
/* Holds / releases a stream: while held nothing on it completes. */
void fake_cuda_hold(struct CUstream_st* stream);
void fake_cuda_release(struct CUstream_st* stream);

/* The calling thread's current context, as cuCtxGetCurrent would say. */
struct CUctx_st* fake_cuda_current_context(void);

typedef struct fake_cuda_counters {
    int64_t events_created;
    int64_t events_live;
    int64_t streams_live;
    int64_t event_records;
    /* Records on an event whose previous record had not completed yet: the
     * plugin promises never to reuse an event that is still pending. */
    int64_t records_on_pending_event;
    int64_t event_synchronizes;          /* cuEventSynchronize calls (the anchor refresh makes them) */
    int64_t get_proc_address_hits;
    int64_t primary_ctx_retained;        /* retain count of device 0's primary context */
    int64_t calls_without_context;       /* record/create/elapsed with no current context */
    int64_t host_functions_run;
    int64_t host_functions_dropped;      /* never called: a context error came first */
    int64_t get_proc_address_too_new;    /* asked for a version newer than the driver */
    int64_t event_syncs_stalled;         /* cuEventSynchronize calls waiting in a stall now */
} fake_cuda_counters;

void fake_cuda_get_counters(fake_cuda_counters* out);

#ifdef __cplusplus
}
#endif

#endif /* LAPSE_TESTS_FAKE_CUDA_DRIVER_H */
