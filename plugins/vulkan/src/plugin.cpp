// The one exported symbol of lapse_vulkan.so.
#include "device.hpp"

#include <lapse/sdk/plugin.hpp>

LAPSE_PLUGIN_ENTRY
{
    if (!lapse::sdk::host_is_compatible(host, "vulkan")) return nullptr;
    static const lapse_plugin plugin = lapse::sdk::make_plugin<lapse::vulkan::Device>(
        "vulkan", "0.1.0", "GPU timestamp queries on Vulkan compute queues (own device or attached to the host's)",
        LAPSE_CAP_DEVICE_CLOCK | LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING | LAPSE_CAP_SPLIT_THREADS |
            LAPSE_CAP_HOST_TIMELINE);
    return &plugin;
}
