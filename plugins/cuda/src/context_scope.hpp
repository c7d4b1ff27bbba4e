// Makes the device's context current on the calling thread for one scope,
// and puts back whatever was current before.
//
// Why push/pop and not cuCtxSetCurrent: the calling thread belongs to the
// host, which may have its own context current (the runtime's, another
// device's); replacing it would break the host's next CUDA call. The common
// case — our primary context is already current, as it is for a host using
// the runtime API on the same device — costs one cuCtxGetCurrent (a thread-
// local read in the driver) and no push.
#pragma once

#include "driver.hpp"

namespace lapse::cuda {

class ContextScope {
public:
    ContextScope(const DriverApi& api, CUcontext context) noexcept : api_(api)
    {
        CUcontext current = nullptr;
        if (api.ctx_get_current(&current) == CUDA_SUCCESS && current == context) return;
        result_ = api.ctx_push_current(context);
        pushed_ = result_ == CUDA_SUCCESS;
    }
    ~ContextScope()
    {
        if (pushed_) {
            CUcontext popped = nullptr;
            api_.ctx_pop_current(&popped);
        }
    }
    ContextScope(const ContextScope&) = delete;
    ContextScope& operator=(const ContextScope&) = delete;

    // CUDA_SUCCESS, or why the context could not be made current.
    CUresult result() const noexcept { return result_; }

private:
    const DriverApi& api_;
    CUresult result_ = CUDA_SUCCESS;
    bool pushed_ = false;
};

}  // namespace lapse::cuda
