// lapse_cuda.so's one export: the descriptor, built by the SDK adapter
// around CudaDevice. Opening a device loads the driver; loading the plugin
// does not, so the plugin loads and negotiates on any machine.
#include "device.hpp"

#include <lapse/sdk/plugin.hpp>

LAPSE_PLUGIN_ENTRY
{
    if (!lapse::sdk::host_is_compatible(host, "cuda")) return nullptr;
    static const lapse_plugin plugin = lapse::sdk::make_plugin<lapse::cuda::CudaDevice>(
        "cuda", "0.1.0", "CUDA streams timed by pooled CUDA events, placed on the host clock",
        LAPSE_CAP_DEVICE_CLOCK | LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING | LAPSE_CAP_SPLIT_THREADS |
            LAPSE_CAP_HOST_TIMELINE);
    return &plugin;
}
