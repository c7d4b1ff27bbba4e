// Own mode: the queue copies the stamps into host memory, so resolve reads
// them there instead of asking the driver.
//
// Each segment ends with vkCmdCopyQueryPoolResults of the queries of the
// windows stamped in it (the positions from its oldest to its newest
// stamp) into a host-visible, host-coherent buffer that mirrors the query
// pool: a 64-bit value and its availability per query, at the query's
// index. Before the copy, a barrier waits for every command submitted
// before it on the queue (the stamps included); after it, a barrier makes
// the copy visible to the host. So once the timeline semaphore says a
// segment is done, the stamps of every window whose end it holds are in
// the buffer, and resolve reads them with plain loads.
//
// Why: vkGetQueryPoolResults is a driver call per run of windows that may
// wait on the device (lavapipe waits for its queue thread to go idle, and
// then reads query objects that thread wrote), while the copy is work the
// queue does at a segment's end, as GPU profilers have their devices copy
// their timestamps. Attach mode keeps vkGetQueryPoolResults: the host
// records and submits the command buffers there.
//
// Copying a range may also copy queries of windows stamped in other
// segments: a query not yet written is copied as unavailable (no WAIT bit,
// so the queue never waits for it), or with its slot's previous value when
// its reset sits in a later segment; either way the segment that writes it
// copies it again later in queue order. One already written is copied with
// the same value. A window is read only once the segments of both its
// stamps are done, by which time both copies have landed.
#include "stream.hpp"

#include <cstring>

namespace lapse::vulkan {

namespace {

// A value and its availability (VK_QUERY_RESULT_64_BIT | WITH_AVAILABILITY).
constexpr VkDeviceSize kCopyStride = 2 * sizeof(uint64_t);

}  // namespace

bool Stream::create_stamp_copies() noexcept
{
    const VkApi& vk = ctx_.api;
    const VkDeviceSize size = kCopyStride * 2 * cfg_.ring_windows;
    VkBufferCreateInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bi.size = size;
    bi.usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    if (vk.vkCreateBuffer(ctx_.device, &bi, nullptr, &stamp_buffer_) != VK_SUCCESS) {
        stamp_buffer_ = VK_NULL_HANDLE;
        return false;
    }
    VkMemoryRequirements req{};
    vk.vkGetBufferMemoryRequirements(ctx_.device, stamp_buffer_, &req);
    VkPhysicalDeviceMemoryProperties props{};
    vk.vkGetPhysicalDeviceMemoryProperties(ctx_.physical, &props);
    // Host-coherent: a completed segment's copy is visible to plain loads
    // with no vkInvalidateMappedMemoryRanges per resolve. Every Vulkan
    // device has such a type.
    constexpr VkMemoryPropertyFlags kWanted = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = props.memoryTypeCount;
    for (uint32_t i = 0; i < props.memoryTypeCount && type == props.memoryTypeCount; ++i)
        if ((req.memoryTypeBits & (1u << i)) != 0 && (props.memoryTypes[i].propertyFlags & kWanted) == kWanted) type = i;
    VkMemoryAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = type;
    void* mapped = nullptr;
    if (type == props.memoryTypeCount || vk.vkAllocateMemory(ctx_.device, &ai, nullptr, &stamp_memory_) != VK_SUCCESS) {
        stamp_memory_ = VK_NULL_HANDLE;
        destroy_stamp_copies();
        return false;
    }
    if (vk.vkBindBufferMemory(ctx_.device, stamp_buffer_, stamp_memory_, 0) != VK_SUCCESS ||
        vk.vkMapMemory(ctx_.device, stamp_memory_, 0, size, 0, &mapped) != VK_SUCCESS) {
        destroy_stamp_copies();
        return false;
    }
    // Nothing copied yet reads as unavailable.
    std::memset(mapped, 0, static_cast<std::size_t>(size));
    stamp_copies_ = static_cast<const uint64_t*>(mapped);
    return true;
}

void Stream::destroy_stamp_copies() noexcept
{
    const VkApi& vk = ctx_.api;
    // Freeing the memory unmaps it.
    if (stamp_buffer_ != VK_NULL_HANDLE) vk.vkDestroyBuffer(ctx_.device, stamp_buffer_, nullptr);
    if (stamp_memory_ != VK_NULL_HANDLE) vk.vkFreeMemory(ctx_.device, stamp_memory_, nullptr);
    stamp_buffer_ = VK_NULL_HANDLE;
    stamp_memory_ = VK_NULL_HANDLE;
    stamp_copies_ = nullptr;
}

void Stream::record_stamp_copies(Segment& g) noexcept
{
    // The range starts empty when the segment begins (Stream::recording).
    if (g.first_stamped == kNothingStamped || stamp_copies_ == nullptr) return;
    const uint64_t first = g.first_stamped;
    const uint64_t last = g.last_stamped;
    const VkApi& vk = ctx_.api;
    // The stamps before the copy: every command submitted earlier on this
    // queue has finished, so each query written so far reads available.
    VkMemoryBarrier before{};
    before.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    before.srcAccessMask = 0;
    before.dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    vk.vkCmdPipelineBarrier(g.cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0,
                            nullptr, 0, nullptr);
    // Positions first..last hold fewer windows than the ring (none of them
    // is reclaimed while this segment is unfinished), so at most two runs
    // of slots: up to the ring's end, and from its start.
    const uint64_t windows = last - first + 1;
    const uint32_t from = ring_.index_of(first);
    const uint32_t to_end = ring_.capacity() - from;
    const uint32_t head_run = windows < to_end ? static_cast<uint32_t>(windows) : to_end;
    auto copy = [&](uint32_t slot, uint32_t count) {
        vk.vkCmdCopyQueryPoolResults(g.cb, pool_, 2 * slot, 2 * count, stamp_buffer_, kCopyStride * 2 * slot,
                                     kCopyStride, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
    };
    copy(from, head_run);
    if (windows > head_run) copy(0, static_cast<uint32_t>(windows - head_run));
    VkMemoryBarrier after{};
    after.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    after.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    after.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vk.vkCmdPipelineBarrier(g.cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &after, 0, nullptr,
                            0, nullptr);
}

}  // namespace lapse::vulkan
