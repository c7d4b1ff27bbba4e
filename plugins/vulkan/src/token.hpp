// Token ids of the Vulkan plugin: the stream and the window's ring position
// packed into one 64-bit id, so that a token names exactly one window for
// the life of the device (positions only grow) and the plugin finds the
// window's stream without a device-wide table or lock.
#pragma once

#include <cstdint>

namespace lapse::vulkan {

inline constexpr uint32_t kStreamBits = 8;
inline constexpr uint32_t kMaxStreams = 1u << kStreamBits;  // an upper bound; config limits it further

constexpr uint64_t encode_token_id(uint64_t position, uint32_t stream) noexcept
{
    return ((position + 1) << kStreamBits) | stream;  // never 0: position + 1 >= 1
}

// False for ids this plugin never hands out (0, or no position part).
constexpr bool decode_token_id(uint64_t id, uint64_t& position, uint32_t& stream) noexcept
{
    if ((id >> kStreamBits) == 0) return false;
    position = (id >> kStreamBits) - 1;
    stream = static_cast<uint32_t>(id & (kMaxStreams - 1));
    return true;
}

}  // namespace lapse::vulkan
