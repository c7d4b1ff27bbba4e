// The busy-loop compute shader (plugins/vulkan/shaders/busy.comp, embedded
// as SPIR-V at build time) set up on a VkDevice: a pipeline, a small
// storage buffer, and record(cb, iterations) that dispatches one
// invocation looping `iterations` times. Calls Vulkan through the system
// loader the test links; the handles may come from the plugin (own mode)
// or from the test itself (attach mode).
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>

namespace lapse::test {

class BusyKernel {
public:
    BusyKernel(VkPhysicalDevice physical, VkDevice device);
    ~BusyKernel();
    BusyKernel(const BusyKernel&) = delete;
    BusyKernel& operator=(const BusyKernel&) = delete;

    // Records one dispatch of about `iterations` loop steps (in workgroups
    // of 16384) and a barrier after it.
    void record(VkCommandBuffer cb, uint32_t iterations) const;

private:
    VkDevice device_;
    VkBuffer buffer_ = VK_NULL_HANDLE;
    VkDeviceMemory memory_ = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
    VkPipelineLayout layout_ = VK_NULL_HANDLE;
    VkShaderModule module_ = VK_NULL_HANDLE;
    VkPipeline pipeline_ = VK_NULL_HANDLE;
    VkDescriptorPool pool_ = VK_NULL_HANDLE;
    VkDescriptorSet set_ = VK_NULL_HANDLE;
};

}  // namespace lapse::test
