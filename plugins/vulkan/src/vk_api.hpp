// The Vulkan entry points the plugin uses, loaded at run time.
//
// The plugin never links libvulkan: a machine without a Vulkan loader must
// still load lapse_vulkan.so and hear "unavailable: <why>" from open, not a
// dynamic-linker failure. Functions come from vkGetInstanceProcAddr and
// vkGetDeviceProcAddr (device-level pointers skip the loader trampoline).
#pragma once

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include <string>

namespace lapse::vulkan {

#define LAPSE_VK_GLOBAL_FUNCTIONS(X)        \
    X(vkCreateInstance)                     \
    X(vkEnumerateInstanceLayerProperties)   \
    X(vkEnumerateInstanceExtensionProperties)

#define LAPSE_VK_INSTANCE_FUNCTIONS(X)             \
    X(vkDestroyInstance)                           \
    X(vkEnumeratePhysicalDevices)                  \
    X(vkGetPhysicalDeviceProperties)               \
    X(vkGetPhysicalDeviceMemoryProperties)         \
    X(vkGetPhysicalDeviceQueueFamilyProperties)    \
    X(vkGetPhysicalDeviceFeatures2)                \
    X(vkEnumerateDeviceExtensionProperties)        \
    X(vkCreateDevice)                              \
    X(vkGetDeviceProcAddr)

// Optional instance-level functions: null when the extension is absent.
#define LAPSE_VK_INSTANCE_OPTIONAL(X)              \
    X(vkCreateDebugUtilsMessengerEXT)              \
    X(vkDestroyDebugUtilsMessengerEXT)             \
    X(vkGetPhysicalDeviceCalibrateableTimeDomainsEXT)

#define LAPSE_VK_DEVICE_FUNCTIONS(X) \
    X(vkDestroyDevice)               \
    X(vkGetDeviceQueue)              \
    X(vkCreateQueryPool)             \
    X(vkDestroyQueryPool)            \
    X(vkGetQueryPoolResults)         \
    X(vkCreateCommandPool)           \
    X(vkDestroyCommandPool)          \
    X(vkResetCommandPool)            \
    X(vkAllocateCommandBuffers)      \
    X(vkBeginCommandBuffer)          \
    X(vkEndCommandBuffer)            \
    X(vkCmdWriteTimestamp)           \
    X(vkCmdResetQueryPool)           \
    X(vkQueueSubmit)                 \
    X(vkCreateSemaphore)             \
    X(vkDestroySemaphore)            \
    X(vkDeviceWaitIdle)              \
    X(vkCreateBuffer)                \
    X(vkDestroyBuffer)               \
    X(vkGetBufferMemoryRequirements) \
    X(vkAllocateMemory)              \
    X(vkFreeMemory)                  \
    X(vkBindBufferMemory)            \
    X(vkMapMemory)                   \
    X(vkCmdCopyQueryPoolResults)     \
    X(vkCmdPipelineBarrier)

// Optional device-level functions (Vulkan 1.2 core or extensions).
#define LAPSE_VK_DEVICE_OPTIONAL(X)  \
    X(vkResetQueryPool)              \
    X(vkGetSemaphoreCounterValue)    \
    X(vkWaitSemaphores)              \
    X(vkSignalSemaphore)             \
    X(vkGetCalibratedTimestampsEXT)

struct VkApi {
    void* library = nullptr;  // dlopen handle of libvulkan.so.1, when we opened it
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define LAPSE_VK_DECLARE(name) PFN_##name name = nullptr;
    LAPSE_VK_GLOBAL_FUNCTIONS(LAPSE_VK_DECLARE)
    LAPSE_VK_INSTANCE_FUNCTIONS(LAPSE_VK_DECLARE)
    LAPSE_VK_INSTANCE_OPTIONAL(LAPSE_VK_DECLARE)
    LAPSE_VK_DEVICE_FUNCTIONS(LAPSE_VK_DECLARE)
    LAPSE_VK_DEVICE_OPTIONAL(LAPSE_VK_DECLARE)
#undef LAPSE_VK_DECLARE

    VkApi() = default;
    VkApi(const VkApi&) = delete;
    VkApi& operator=(const VkApi&) = delete;
    ~VkApi();

    // Opens the system loader (libvulkan.so.1) or uses `gipa` when the host
    // hands its own. Returns false with `why` filled when there is none.
    bool load_loader(PFN_vkGetInstanceProcAddr gipa, std::string& why);
    // Instance- and device-level pointers. Return false and name the first
    // required function missing.
    bool load_instance(VkInstance instance, std::string& why);
    bool load_device(VkDevice device, std::string& why);
};

// "VK_ERROR_DEVICE_LOST", or "VkResult(<n>)" for a value we do not name.
const char* vk_result_name(VkResult result) noexcept;

}  // namespace lapse::vulkan
