#include "vk_api.hpp"

#include <dlfcn.h>

#include <cstdio>

namespace lapse::vulkan {

VkApi::~VkApi()
{
    if (library != nullptr) dlclose(library);
}

bool VkApi::load_loader(PFN_vkGetInstanceProcAddr gipa, std::string& why)
{
    if (gipa == nullptr) {
        library = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
        if (library == nullptr) {
            const char* err = dlerror();
            why = std::string("no Vulkan loader: dlopen(libvulkan.so.1) failed: ") + (err ? err : "unknown error");
            return false;
        }
        gipa = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(library, "vkGetInstanceProcAddr"));
        if (gipa == nullptr) {
            why = "libvulkan.so.1 has no vkGetInstanceProcAddr";
            return false;
        }
    }
    vkGetInstanceProcAddr = gipa;
#define LAPSE_VK_LOAD_GLOBAL(name)                                                              \
    name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(VK_NULL_HANDLE, #name));         \
    if (name == nullptr) {                                                                      \
        why = "the Vulkan loader has no " #name;                                                \
        return false;                                                                           \
    }
    LAPSE_VK_GLOBAL_FUNCTIONS(LAPSE_VK_LOAD_GLOBAL)
#undef LAPSE_VK_LOAD_GLOBAL
    return true;
}

bool VkApi::load_instance(VkInstance instance, std::string& why)
{
#define LAPSE_VK_LOAD_INSTANCE(name)                                                    \
    name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(instance, #name));       \
    if (name == nullptr) {                                                              \
        why = "the Vulkan instance has no " #name;                                      \
        return false;                                                                   \
    }
    LAPSE_VK_INSTANCE_FUNCTIONS(LAPSE_VK_LOAD_INSTANCE)
#undef LAPSE_VK_LOAD_INSTANCE
#define LAPSE_VK_LOAD_OPTIONAL(name) name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(instance, #name));
    LAPSE_VK_INSTANCE_OPTIONAL(LAPSE_VK_LOAD_OPTIONAL)
#undef LAPSE_VK_LOAD_OPTIONAL
    return true;
}

bool VkApi::load_device(VkDevice device, std::string& why)
{
#define LAPSE_VK_LOAD_DEVICE(name)                                                  \
    name = reinterpret_cast<PFN_##name>(vkGetDeviceProcAddr(device, #name));       \
    if (name == nullptr) {                                                          \
        why = "the Vulkan device has no " #name;                                    \
        return false;                                                               \
    }
    LAPSE_VK_DEVICE_FUNCTIONS(LAPSE_VK_LOAD_DEVICE)
#undef LAPSE_VK_LOAD_DEVICE
#define LAPSE_VK_LOAD_OPTIONAL(name) name = reinterpret_cast<PFN_##name>(vkGetDeviceProcAddr(device, #name));
    LAPSE_VK_DEVICE_OPTIONAL(LAPSE_VK_LOAD_OPTIONAL)
#undef LAPSE_VK_LOAD_OPTIONAL
    // Devices of Vulkan 1.1 expose host query reset only under the EXT name.
    if (vkResetQueryPool == nullptr)
        vkResetQueryPool = reinterpret_cast<PFN_vkResetQueryPool>(vkGetDeviceProcAddr(device, "vkResetQueryPoolEXT"));
    return true;
}

const char* vk_result_name(VkResult result) noexcept
{
    switch (result) {
#define LAPSE_VK_RESULT(name) \
    case name: return #name;
        LAPSE_VK_RESULT(VK_SUCCESS)
        LAPSE_VK_RESULT(VK_NOT_READY)
        LAPSE_VK_RESULT(VK_TIMEOUT)
        LAPSE_VK_RESULT(VK_EVENT_SET)
        LAPSE_VK_RESULT(VK_EVENT_RESET)
        LAPSE_VK_RESULT(VK_INCOMPLETE)
        LAPSE_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
        LAPSE_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        LAPSE_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
        LAPSE_VK_RESULT(VK_ERROR_DEVICE_LOST)
        LAPSE_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
        LAPSE_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
        LAPSE_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
        LAPSE_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
        LAPSE_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
        LAPSE_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
        LAPSE_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
        LAPSE_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
        LAPSE_VK_RESULT(VK_ERROR_UNKNOWN)
        LAPSE_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
        LAPSE_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
        LAPSE_VK_RESULT(VK_ERROR_FRAGMENTATION)
        LAPSE_VK_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
        LAPSE_VK_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
        LAPSE_VK_RESULT(VK_ERROR_SURFACE_LOST_KHR)
        LAPSE_VK_RESULT(VK_ERROR_NATIVE_WINDOW_IN_USE_KHR)
        LAPSE_VK_RESULT(VK_SUBOPTIMAL_KHR)
        LAPSE_VK_RESULT(VK_ERROR_OUT_OF_DATE_KHR)
        LAPSE_VK_RESULT(VK_ERROR_VALIDATION_FAILED_EXT)
#undef LAPSE_VK_RESULT
    default: {
        // Unnamed values are rare; a thread-local buffer keeps this noexcept.
        thread_local char buffer[32];
        std::snprintf(buffer, sizeof buffer, "VkResult(%d)", static_cast<int>(result));
        return buffer;
    }
    }
}

}  // namespace lapse::vulkan
