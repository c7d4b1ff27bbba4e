// forward — the plugin's one export.
#include "forward_device.hpp"

#include <lapse/sdk/plugin.hpp>

LAPSE_PLUGIN_ENTRY
{
    // What forward can offer at best; describe says what a device offers,
    // which depends on the backend it stacks on.
    static const lapse_plugin plugin = lapse::sdk::make_plugin<lapse::forward::ForwardDevice>(
        "forward", "0.1.0",
        "stacks on any backend and makes it whole: nesting, overlap, split threads, system-time fallback",
        LAPSE_CAP_DEVICE_CLOCK | LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING | LAPSE_CAP_SPLIT_THREADS |
            LAPSE_CAP_BATCHING | LAPSE_CAP_HOST_TIMELINE);
    if (!lapse::sdk::host_is_compatible(host, "forward")) return nullptr;
    return &plugin;
}
