// The C face of lapse.cuda.stream/1: trampolines from the extension struct
// (plain C function pointers taking lapse_device*) to CudaDevice, catching
// everything at the boundary as the SDK adapter does for the descriptor.
#pragma once

#include <lapse/cuda.h>

namespace lapse::cuda {

lapse_cuda_stream_ext make_stream_extension() noexcept;

}  // namespace lapse::cuda
