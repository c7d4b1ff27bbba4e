// The Vulkan device's config keys (plugins/vulkan/README.md lists them).
#include "device.hpp"

#include <lapse/sdk/error.hpp>

#include <algorithm>
#include <string>

namespace lapse::vulkan {

// ---------------------------------------------------------------------------
// Config

Device::Settings Device::read_settings(const sdk::Config& config)
{
    // Every key is read whatever the mode: the host refuses keys a plugin
    // never read, and a key that only matters in one mode is still valid.
    Settings s;
    std::string mode = config.string("mode", "own");
    if (mode == "attach")
        s.attach = true;
    else if (mode != "own")
        config.reject("mode", "must be \"own\" or \"attach\", got \"" + mode + "\"");

    // `device` is an index or a name substring.
    if (config) {
        const lapse_host* h = config.host();
        const char* name = nullptr;
        lapse_error e = sdk::make_error();
        lapse_status st = h->config_string(h, config.node(), "device", "", &name, &e);
        if (st == LAPSE_OK) {
            s.device_name = name != nullptr ? name : "";
        } else {
            int64_t index = 0;
            lapse_error e2 = sdk::make_error();
            if (h->config_int(h, config.node(), "device", 0, &index, &e2) != LAPSE_OK)
                config.reject("device", "must be a device index (integer) or a substring of the device name");
            if (index < 0) config.reject("device", "a device index must be >= 0, got " + std::to_string(index));
            s.device_index = index;
        }
    }
    s.queues = static_cast<uint32_t>(config.integer("queues", 1, 1, kMaxOwnStreams));
    s.validation = config.boolean("validation", false);
    int64_t ring = config.integer("ring_size", 8192, 2, 1 << 22);
    if (ring % 2 != 0)
        config.reject("ring_size", "counts timestamp queries, two per window, so it must be even; got " +
                                       std::to_string(ring));
    s.ring_windows = static_cast<uint32_t>(ring / 2);
    s.host_query_reset = config.boolean("host_query_reset", true);
    std::string stage = config.string("start_stage", "top_of_pipe");
    if (stage == "top_of_pipe")
        s.start_stage = VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT;
    else if (stage == "bottom_of_pipe")
        s.start_stage = VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT;
    else
        config.reject("start_stage", "must be \"top_of_pipe\" or \"bottom_of_pipe\", got \"" + stage + "\"");
    s.calibrate = config.boolean("calibrate", true);
    s.recalibrate_ns = config.integer("recalibrate_ms", 1000, 1, 3600 * 1000) * 1000000;
    s.simulate_valid_bits = config.integer("simulate_valid_bits", -1, -1, 64);
    s.segments = static_cast<uint32_t>(config.integer("in_flight", 8, 2, 64));
    s.batch_windows = static_cast<uint32_t>(config.integer("batch_windows", 256, 1, 1 << 20));
    std::string submit = config.string("submit", "commands");
    if (submit == "host")
        s.host_work = true;
    else if (submit != "commands")
        config.reject("submit", "must be \"commands\" (work records into a VkCommandBuffer) or \"host\" (work is "
                                "host code run in stream order), got \"" + submit + "\"");
    return s;
}

uint32_t Device::valid_bits_for(uint32_t family_bits) const noexcept
{
    if (settings_.simulate_valid_bits < 0) return family_bits;
    return std::min(family_bits, static_cast<uint32_t>(settings_.simulate_valid_bits));
}

}  // namespace lapse::vulkan
