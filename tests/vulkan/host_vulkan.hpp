// The host application of the attach tests: its own instance (validation
// on, every warning counted), device, queue, command pool and fence, as an
// engine that brings its Vulkan objects to lapse would have them.
#pragma once

#include <catch2/catch.hpp>

#include <lapse/vulkan.h>
#include <lapse_test/test_host.hpp>  // now_ns
#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace lapse::test {

// lavapipe (Mesa 22.3) answers vkGetQueryPoolResults and vkResetQueryPool
// on its queue's gallium context, from the calling thread, with no lock
// against the queue thread running a submission (lvp_query.c): a read of a
// query the running command buffer has just ended flushes that context
// from two threads at once, which can crash the driver's queue thread (as
// read off lvp_query.c; the attach capture test crashed inside
// libvulkan_lvp.so about once in ten runs on the AMD VMs). So this host does what plugins/vulkan/README.md asks
// of a host on such a driver: the vkGetInstanceProcAddr it hands the
// plugin gives query calls that take the lock its submissions hold until
// their fence has signalled. Any other driver needs none of this.
namespace serialized_queries {

inline std::mutex queue_lock;  // held by a submission until its fence signals
inline std::atomic<uint64_t> calls{0};  // query calls the plugin made through them

inline VKAPI_ATTR VkResult VKAPI_CALL get_query_pool_results(VkDevice device, VkQueryPool pool, uint32_t first,
                                                             uint32_t count, size_t size, void* data,
                                                             VkDeviceSize stride, VkQueryResultFlags flags)
{
    std::lock_guard lock(queue_lock);
    calls.fetch_add(1, std::memory_order_relaxed);
    return vkGetQueryPoolResults(device, pool, first, count, size, data, stride, flags);
}

inline VKAPI_ATTR void VKAPI_CALL reset_query_pool(VkDevice device, VkQueryPool pool, uint32_t first, uint32_t count)
{
    std::lock_guard lock(queue_lock);
    calls.fetch_add(1, std::memory_order_relaxed);
    vkResetQueryPool(device, pool, first, count);
}

// The query calls by any of their names, else null.
inline PFN_vkVoidFunction query_call(const char* name)
{
    if (std::strcmp(name, "vkGetQueryPoolResults") == 0)
        return reinterpret_cast<PFN_vkVoidFunction>(&get_query_pool_results);
    if (std::strcmp(name, "vkResetQueryPool") == 0 || std::strcmp(name, "vkResetQueryPoolEXT") == 0)
        return reinterpret_cast<PFN_vkVoidFunction>(&reset_query_pool);
    return nullptr;
}

inline VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL get_device_proc_addr(VkDevice device, const char* name)
{
    if (PFN_vkVoidFunction f = query_call(name)) return f;
    return vkGetDeviceProcAddr(device, name);
}

inline VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL get_instance_proc_addr(VkInstance instance, const char* name)
{
    if (PFN_vkVoidFunction f = query_call(name)) return f;
    if (std::strcmp(name, "vkGetDeviceProcAddr") == 0)
        return reinterpret_cast<PFN_vkVoidFunction>(&get_device_proc_addr);
    if (std::strcmp(name, "vkGetInstanceProcAddr") == 0)
        return reinterpret_cast<PFN_vkVoidFunction>(&get_instance_proc_addr);
    return vkGetInstanceProcAddr(instance, name);
}

}  // namespace serialized_queries

// Warnings and errors the validation layer said on the host's instance
// (creation and destruction included), and the last of them.
inline std::atomic<int> g_validation_messages{0};
inline std::string g_last_message;

inline VKAPI_ATTR VkBool32 VKAPI_CALL count_message(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                                    VkDebugUtilsMessageTypeFlagsEXT,
                                                    const VkDebugUtilsMessengerCallbackDataEXT* data, void*)
{
    ++g_validation_messages;
    g_last_message = data && data->pMessage ? data->pMessage : "";
    return VK_FALSE;
}

// The host application's Vulkan objects.
struct HostVulkan {
    VkInstance instance = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    VkQueue queue = VK_NULL_HANDLE;
    uint32_t family = 0;
    VkCommandPool pool = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    bool calibrated = false;

    explicit HostVulkan(bool host_query_reset)
    {
        VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
        mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
        mi.pfnUserCallback = &count_message;
        const char* layer = "VK_LAYER_KHRONOS_validation";
        const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
        VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
        app.apiVersion = VK_API_VERSION_1_2;
        VkInstanceCreateInfo ii{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
        ii.pNext = &mi;
        ii.pApplicationInfo = &app;
        ii.enabledLayerCount = 1;
        ii.ppEnabledLayerNames = &layer;
        ii.enabledExtensionCount = 1;
        ii.ppEnabledExtensionNames = &ext;
        REQUIRE(vkCreateInstance(&ii, nullptr, &instance) == VK_SUCCESS);
        auto create_messenger = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
        REQUIRE(create_messenger(instance, &mi, nullptr, &messenger) == VK_SUCCESS);
        uint32_t n = 1;
        VkResult r = vkEnumeratePhysicalDevices(instance, &n, &physical);
        REQUIRE((r == VK_SUCCESS || r == VK_INCOMPLETE));
        REQUIRE(n >= 1);
        uint32_t nf = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(physical, &nf, nullptr);
        std::vector<VkQueueFamilyProperties> families(nf);
        vkGetPhysicalDeviceQueueFamilyProperties(physical, &nf, families.data());
        for (family = 0; family < nf && !(families[family].queueFlags & VK_QUEUE_COMPUTE_BIT); ++family) {}
        REQUIRE(family < nf);

        uint32_t ne = 0;
        vkEnumerateDeviceExtensionProperties(physical, nullptr, &ne, nullptr);
        std::vector<VkExtensionProperties> exts(ne);
        vkEnumerateDeviceExtensionProperties(physical, nullptr, &ne, exts.data());
        for (auto& e : exts) calibrated = calibrated || std::strcmp(e.extensionName, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME) == 0;
        const char* dev_ext = VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME;

        float priority = 1.0f;
        VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
        qi.queueFamilyIndex = family;
        qi.queueCount = 1;
        qi.pQueuePriorities = &priority;
        VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
        f12.hostQueryReset = host_query_reset ? VK_TRUE : VK_FALSE;
        VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
        di.pNext = &f12;
        di.queueCreateInfoCount = 1;
        di.pQueueCreateInfos = &qi;
        di.enabledExtensionCount = calibrated ? 1 : 0;
        di.ppEnabledExtensionNames = &dev_ext;
        REQUIRE(vkCreateDevice(physical, &di, nullptr, &device) == VK_SUCCESS);
        vkGetDeviceQueue(device, family, 0, &queue);
        VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
        pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
        pi.queueFamilyIndex = family;
        REQUIRE(vkCreateCommandPool(device, &pi, nullptr, &pool) == VK_SUCCESS);
        VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        REQUIRE(vkCreateFence(device, &fi, nullptr, &fence) == VK_SUCCESS);
    }
    ~HostVulkan()
    {
        vkDestroyFence(device, fence, nullptr);
        vkDestroyCommandPool(device, pool, nullptr);
        vkDestroyDevice(device, nullptr);
        auto destroy_messenger = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
        destroy_messenger(instance, messenger, nullptr);
        vkDestroyInstance(instance, nullptr);
    }

    lapse_vulkan_attach_info attach_info(bool host_query_reset) const
    {
        lapse_vulkan_attach_info info{};
        info.struct_size = sizeof info;
        info.queue_family_index = family;
        info.instance = instance;
        info.physical_device = physical;
        info.device = device;
        info.queue = queue;
        info.get_instance_proc_addr = &serialized_queries::get_instance_proc_addr;
        info.host_query_reset_enabled = host_query_reset ? 1 : 0;
        info.calibrated_timestamps_enabled = calibrated ? 1 : 0;
        return info;
    }

    VkCommandBuffer begin()
    {
        VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
        ai.commandPool = pool;
        ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        ai.commandBufferCount = 1;
        VkCommandBuffer cb = VK_NULL_HANDLE;
        REQUIRE(vkAllocateCommandBuffers(device, &ai, &cb) == VK_SUCCESS);
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        REQUIRE(vkBeginCommandBuffer(cb, &bi) == VK_SUCCESS);
        return cb;
    }
    // Ends, submits, waits on the fence; returns the host's submit-and-wait time.
    int64_t submit_and_wait(VkCommandBuffer cb)
    {
        REQUIRE(vkEndCommandBuffer(cb) == VK_SUCCESS);
        VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
        si.commandBufferCount = 1;
        si.pCommandBuffers = &cb;
        const int64_t t0 = now_ns();
        {
            std::lock_guard lock(serialized_queries::queue_lock);
            REQUIRE(vkQueueSubmit(queue, 1, &si, fence) == VK_SUCCESS);
            REQUIRE(vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX) == VK_SUCCESS);
        }
        const int64_t t1 = now_ns();
        REQUIRE(vkResetFences(device, 1, &fence) == VK_SUCCESS);
        vkFreeCommandBuffers(device, pool, 1, &cb);
        return t1 - t0;
    }
};

}  // namespace lapse::test
