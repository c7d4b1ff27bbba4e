// fusion — the plugin's one export.
#include "fusion_device.hpp"

#include <lapse/sdk/plugin.hpp>

LAPSE_PLUGIN_ENTRY
{
    // What fusion can offer at best; describe says what a device offers,
    // which is the inner backend's capabilities plus batching.
    static const lapse_plugin plugin = lapse::sdk::make_plugin<lapse::fusion::FusionDevice>(
        "fusion", "0.1.0", "batches submitted work into one submission to any backend",
        LAPSE_CAP_DEVICE_CLOCK | LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING | LAPSE_CAP_SPLIT_THREADS |
            LAPSE_CAP_BATCHING | LAPSE_CAP_SINGLE_WINDOW | LAPSE_CAP_HOST_TIMELINE);
    if (!lapse::sdk::host_is_compatible(host, "fusion")) return nullptr;
    return &plugin;
}
