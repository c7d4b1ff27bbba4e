// cpu plugin — the one exported symbol.
#include "cpu_device.hpp"

#include <lapse/lapse.h>
#include <lapse/sdk/plugin.hpp>

LAPSE_PLUGIN_ENTRY
{
    if (!lapse::sdk::host_is_compatible(host, "cpu")) return nullptr;
    static const lapse_plugin plugin = lapse::sdk::make_plugin<lapse::cpu::CpuDevice>(
        "cpu", "0.1.0", "CPU worker streams; windows are markers the worker stamps (TSC or CLOCK_MONOTONIC, on the host monotonic timeline)",
        LAPSE_CAP_DEVICE_CLOCK | LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING | LAPSE_CAP_SPLIT_THREADS |
            LAPSE_CAP_HOST_TIMELINE);
    return &plugin;
}
