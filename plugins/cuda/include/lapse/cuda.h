/* lapse CUDA plugin — the public extension header (C99).
 *
 * Extension "lapse.cuda.stream/1": measure work the host launches itself, on
 * its own CUstream, with the plugin's windows. Get it with
 *
 *     const lapse_cuda_stream_ext* ext =
 *         plugin->get_extension(device, LAPSE_CUDA_STREAM_EXTENSION);
 *
 * and check ext != NULL and ext->struct_size >= the size up to the last
 * field you use (the struct only grows at its end).
 *
 * The header names CUDA's handle types by their struct tags, so it needs
 * neither cuda.h nor the toolkit: `struct CUstream_st*` is exactly CUstream
 * and `struct CUctx_st*` is exactly CUcontext.
 */
#ifndef LAPSE_CUDA_H
#define LAPSE_CUDA_H

#include <stdint.h>

#include <lapse/lapse.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LAPSE_CUDA_STREAM_EXTENSION "lapse.cuda.stream/1"

struct CUstream_st;
struct CUctx_st;

typedef struct lapse_cuda_stream_ext {
    uint32_t struct_size; /* sizeof(lapse_cuda_stream_ext) as the plugin was built */
    uint32_t reserved;    /* 0 */

    /* Makes the host's `stream` a lapse stream of `device` and writes its
     * index to *out (at or above the device's own stream count). The stream
     * must belong to the device's context (the device's primary context,
     * see `context`): LAPSE_ERROR_INVALID_ARGUMENT otherwise, naming the
     * device the stream's context is on. NULL and CU_STREAM_LEGACY register
     * the context's legacy default stream (windows on it follow its implicit
     * synchronisation with the context's blocking streams: see the plugin's
     * README); CU_STREAM_PER_THREAD is refused (it is another stream on each
     * thread, and a window may close on another thread).
     * The contract on the handle, which the plugin cannot check: `stream`
     * is a live stream the host created and keeps alive until
     * unregister_stream returned (cuStreamGetCtx on a destroyed handle is
     * undefined behaviour in CUDA, not an error code). What it can check,
     * it does: the context and, through it, the device.
     * Registering the same CUstream twice yields two indices.
     * LAPSE_ERROR_CAPACITY when `max_registered_streams` are registered.
     * [thread-safe] */
    lapse_status (*register_stream)(lapse_device* device, struct CUstream_st* stream, lapse_stream* out,
                                    lapse_error* error);

    /* Forgets a registered stream; its index may be handed out again later.
     * Refused (LAPSE_ERROR_INVALID_ARGUMENT) while windows opened on it are
     * still open: close or abandon them first. Windows already closed on it
     * still resolve afterwards. Work submitted to it with submit = "host"
     * and not yet run is waited for first, so that the host may destroy the
     * stream once this returns. Refuses the device's own streams.
     * [any thread, not concurrently with other calls that name this stream] */
    lapse_status (*unregister_stream)(lapse_device* device, lapse_stream stream, lapse_error* error);

    /* The CUstream behind any stream index of the device (its own streams
     * included), for a host that launches onto them without `submit`.
     * [thread-safe] */
    lapse_status (*native_stream)(lapse_device* device, lapse_stream stream, struct CUstream_st** out,
                                  lapse_error* error);

    /* The device's CUDA context (the device's primary context, retained by
     * the plugin until close). [thread-safe] */
    lapse_status (*context)(lapse_device* device, struct CUctx_st** out, lapse_error* error);
} lapse_cuda_stream_ext;

#ifdef __cplusplus
}
#endif

#endif /* LAPSE_CUDA_H */
