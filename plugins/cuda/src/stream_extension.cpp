#include "stream_extension.hpp"

#include "device.hpp"

#include <lapse/sdk/error.hpp>

namespace lapse::cuda {

namespace {

CudaDevice* self(lapse_device* device) noexcept { return reinterpret_cast<CudaDevice*>(device); }

lapse_status register_stream(lapse_device* device, struct CUstream_st* stream, lapse_stream* out,
                             lapse_error* error) noexcept
{
    if (device == nullptr) return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "cuda: register_stream: device is null");
    try {
        return self(device)->register_stream(stream, out, error);
    } catch (...) {
        return sdk::status_from_current_exception(error, "register_stream");
    }
}

lapse_status unregister_stream(lapse_device* device, lapse_stream stream, lapse_error* error) noexcept
{
    if (device == nullptr)
        return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "cuda: unregister_stream: device is null");
    try {
        return self(device)->unregister_stream(stream, error);
    } catch (...) {
        return sdk::status_from_current_exception(error, "unregister_stream");
    }
}

lapse_status native_stream(lapse_device* device, lapse_stream stream, struct CUstream_st** out,
                           lapse_error* error) noexcept
{
    if (device == nullptr) return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "cuda: native_stream: device is null");
    try {
        return self(device)->native_stream(stream, out, error);
    } catch (...) {
        return sdk::status_from_current_exception(error, "native_stream");
    }
}

lapse_status context(lapse_device* device, struct CUctx_st** out, lapse_error* error) noexcept
{
    if (device == nullptr || out == nullptr)
        return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "cuda: context: null argument");
    *out = self(device)->context();
    return LAPSE_OK;
}

}  // namespace

lapse_cuda_stream_ext make_stream_extension() noexcept
{
    lapse_cuda_stream_ext ext{};
    ext.struct_size = sizeof(lapse_cuda_stream_ext);
    ext.register_stream = &register_stream;
    ext.unregister_stream = &unregister_stream;
    ext.native_stream = &native_stream;
    ext.context = &context;
    return ext;
}

}  // namespace lapse::cuda
