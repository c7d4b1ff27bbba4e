// A lapse device of the Vulkan plugin: own mode (its own instance, device
// and compute queues) or attach mode (the host's objects, bound through the
// lapse.vulkan.commands/1 extension). Routes each call to the stream the
// token or index names; holds no lock of its own on any hot path.
#pragma once

#include "context.hpp"
#include "stream.hpp"

#include <lapse/lapse.h>
#include <lapse/resolve_compact.h>
#include <lapse/sdk/host.hpp>
#include <lapse/vulkan.h>

#include <atomic>
#include <memory>
#include <string_view>

namespace lapse::vulkan {

inline constexpr uint32_t kMaxOwnStreams = 64;
inline constexpr uint32_t kMaxAttachStreams = 8;

class Device {
public:
    static std::unique_ptr<Device> open(sdk::Host host, sdk::Config config);
    explicit Device(const lapse_host* host);
    ~Device();

    void describe(lapse_device_info& info);
    lapse_status sync(lapse_stream stream, lapse_error* error);
    lapse_status submit(lapse_stream stream, lapse_work_fn fn, void* user, lapse_error* error);
    lapse_status profile_start(lapse_stream stream, lapse_token& token, lapse_error* error);
    lapse_status profile_end(lapse_token token, uint32_t flags, lapse_error* error);
    void profile_abandon(lapse_token token) noexcept;
    lapse_status resolve(const lapse_token* tokens, lapse_duration* out, uint32_t count, uint64_t timeout_ns,
                         lapse_error* error);
    const void* extension(std::string_view id);
    // lapse.resolve_compact/1, offered in own mode (resolve.cpp).
    lapse_status resolve_compact(const lapse_token* tokens, lapse_stamp_pair* stamps, uint8_t* states, uint32_t count,
                                 uint64_t timeout_ns, lapse_error* error) noexcept;

    // lapse.vulkan.commands/1
    lapse_status attach(const lapse_vulkan_attach_info* info, lapse_stream* stream, lapse_error* error);
    lapse_status cmd_profile_start(VkCommandBuffer cb, lapse_stream stream, lapse_token* token, lapse_error* error);
    lapse_status cmd_profile_end(VkCommandBuffer cb, lapse_token token, lapse_error* error);
    lapse_status handles(lapse_stream stream, lapse_vulkan_handles* out, lapse_error* error);
    uint64_t validation_message_count() const noexcept;

private:
    struct Settings {
        bool attach = false;
        std::string device_name;   // substring, when `device` is a string
        int64_t device_index = 0;  // when `device` is an integer
        uint32_t queues = 1;
        bool validation = false;
        uint32_t ring_windows = 4096;
        bool host_query_reset = true;
        VkPipelineStageFlagBits start_stage = VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT;
        bool calibrate = true;
        int64_t recalibrate_ns = 1000000000;
        int64_t simulate_valid_bits = -1;
        uint32_t segments = 8;
        uint32_t batch_windows = 256;
        bool host_work = false;
    };

    static Settings read_settings(const sdk::Config& config);
    void open_own(const Settings& s);
    void create_instance(const Settings& s);
    void choose_physical_device(const Settings& s);
    Stream* stream(lapse_stream index) const noexcept
    {
        return index < stream_count_.load(std::memory_order_acquire) ? streams_[index].get() : nullptr;
    }
    // Finds a token's stream; on failure fills `error` (INVALID_TOKEN or
    // WRONG_STREAM) and returns null.
    Stream* token_stream(lapse_token token, uint64_t& position, const char* operation, lapse_error* error,
                         lapse_status& status);
    uint32_t valid_bits_for(uint32_t family_bits) const noexcept;
    // Where a resolve starting at `now_ns` places its windows: on the host
    // clock through the calibration, when the device has one.
    Placement placement(int64_t now_ns) noexcept;
    // Both resolves' passes over the tokens' streams and their wait, until
    // nothing is pending or `deadline` (CLOCK_MONOTONIC ns) passes. Returns
    // the first error met (full answers only; compact ones leave every
    // failure to resolve).
    template <class Answers>
    lapse_status resolve_into(const lapse_token* tokens, Answers answers, uint32_t count, int64_t deadline,
                              const Placement& place, lapse_error* error);
    // The extension struct, or null where the device cannot answer so.
    const lapse_resolve_compact* compact_extension() const noexcept;

    std::unique_ptr<DeviceContext> ctx_;
    Settings settings_;
    VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
    std::unique_ptr<QueueSlot[]> queues_;
    std::unique_ptr<Stream> streams_[kMaxOwnStreams];
    std::atomic<uint32_t> stream_count_{0};
    char name_[128] = {};
};

}  // namespace lapse::vulkan
