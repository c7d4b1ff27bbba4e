// Own mode: the plugin creates the instance (with the validation layer
// when asked), chooses the physical device, and creates the logical device,
// its compute queues and one stream per queue slot.
#include "device.hpp"

#include <lapse/sdk/error.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <vector>

namespace lapse::vulkan {

namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

[[noreturn]] void unavailable(const std::string& why)
{
    throw sdk::Error(LAPSE_ERROR_UNAVAILABLE, "vulkan: unavailable: " + why);
}

[[noreturn]] void vk_throw(DeviceContext& ctx, const char* operation, const char* call, VkResult r)
{
    lapse_error e = sdk::make_error();
    lapse_status st = ctx.vk_fail(&e, operation, call, r);
    throw sdk::Error(st, e.message);
}

std::string lower(std::string s)
{
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// The validation layer's messages go to the host's log and are counted, so
// that tests can fail on any of them.
VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT types,
                                                const VkDebugUtilsMessengerCallbackDataEXT* data, void* user)
{
    auto* ctx = static_cast<DeviceContext*>(user);
    bool counted = (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) != 0 ||
                   (types & (VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                             VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT)) != 0;
    if (counted) ctx->validation_messages.fetch_add(1, std::memory_order_relaxed);
    std::string text = std::string("vulkan: validation: ") + (data && data->pMessage ? data->pMessage : "(no text)");
    ctx->host.log(counted ? LAPSE_LOG_ERROR : LAPSE_LOG_WARN, text);
    return VK_FALSE;
}

bool has_extension(const std::vector<VkExtensionProperties>& list, const char* name)
{
    for (const auto& e : list)
        if (std::strcmp(e.extensionName, name) == 0) return true;
    return false;
}

}  // namespace

void Device::create_instance(const Settings& s)
{
    VkApi& vk = ctx_->api;
    std::vector<const char*> layers, extensions;
    if (s.validation) {
        uint32_t n = 0;
        vk.vkEnumerateInstanceLayerProperties(&n, nullptr);
        std::vector<VkLayerProperties> available(n);
        vk.vkEnumerateInstanceLayerProperties(&n, available.data());
        bool found = false;
        for (const auto& l : available) found = found || std::strcmp(l.layerName, kValidationLayer) == 0;
        if (!found) unavailable("validation = true but the layer VK_LAYER_KHRONOS_validation is not installed");
        layers.push_back(kValidationLayer);
        extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    }
    VkApplicationInfo app{};
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.pApplicationName = "lapse";
    app.pEngineName = "lapse_vulkan";
    app.apiVersion = VK_API_VERSION_1_2;
    VkDebugUtilsMessengerCreateInfoEXT mi{};
    mi.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
    mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    mi.pfnUserCallback = &on_debug_message;
    mi.pUserData = ctx_.get();
    VkInstanceCreateInfo ii{};
    ii.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    ii.pNext = s.validation ? &mi : nullptr;  // also catches messages of create/destroy instance
    ii.pApplicationInfo = &app;
    ii.enabledLayerCount = static_cast<uint32_t>(layers.size());
    ii.ppEnabledLayerNames = layers.data();
    ii.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    ii.ppEnabledExtensionNames = extensions.data();
    VkResult r = vk.vkCreateInstance(&ii, nullptr, &ctx_->instance);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER || r == VK_ERROR_INITIALIZATION_FAILED)
        unavailable(std::string("no usable Vulkan 1.2 driver: vkCreateInstance failed: ") + vk_result_name(r));
    if (r != VK_SUCCESS) vk_throw(*ctx_, "open", "vkCreateInstance", r);
    std::string why;
    if (!vk.load_instance(ctx_->instance, why)) unavailable(why);
    if (s.validation) {
        if (vk.vkCreateDebugUtilsMessengerEXT == nullptr) unavailable("VK_EXT_debug_utils has no vkCreateDebugUtilsMessengerEXT");
        r = vk.vkCreateDebugUtilsMessengerEXT(ctx_->instance, &mi, nullptr, &messenger_);
        if (r != VK_SUCCESS) vk_throw(*ctx_, "open", "vkCreateDebugUtilsMessengerEXT", r);
    }
}

void Device::choose_physical_device(const Settings& s)
{
    VkApi& vk = ctx_->api;
    uint32_t n = 0;
    VkResult r = vk.vkEnumeratePhysicalDevices(ctx_->instance, &n, nullptr);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) vk_throw(*ctx_, "open", "vkEnumeratePhysicalDevices", r);
    if (n == 0) unavailable("the Vulkan loader found no physical device (is a driver such as mesa-vulkan-drivers installed?)");
    std::vector<VkPhysicalDevice> devices(n);
    r = vk.vkEnumeratePhysicalDevices(ctx_->instance, &n, devices.data());
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) vk_throw(*ctx_, "open", "vkEnumeratePhysicalDevices", r);
    std::string names;
    for (uint32_t i = 0; i < n; ++i) {
        VkPhysicalDeviceProperties p;
        vk.vkGetPhysicalDeviceProperties(devices[i], &p);
        names += (i ? ", " : "") + std::to_string(i) + ": " + p.deviceName;
        bool match = s.device_name.empty() ? static_cast<int64_t>(i) == s.device_index
                                           : lower(p.deviceName).find(lower(s.device_name)) != std::string::npos;
        if (match && ctx_->physical == VK_NULL_HANDLE) ctx_->physical = devices[i];
    }
    if (ctx_->physical == VK_NULL_HANDLE) {
        if (s.device_name.empty())
            unavailable("no Vulkan device with index " + std::to_string(s.device_index) + " (found " + names + ")");
        unavailable("no Vulkan device whose name contains \"" + s.device_name + "\" (found " + names + ")");
    }
}

void Device::open_own(const Settings& s)
{
    DeviceContext& ctx = *ctx_;
    VkApi& vk = ctx.api;
    std::string why;
    if (!vk.load_loader(nullptr, why)) unavailable(why);
    create_instance(s);
    choose_physical_device(s);

    VkPhysicalDeviceProperties props;
    vk.vkGetPhysicalDeviceProperties(ctx.physical, &props);
    std::snprintf(name_, sizeof name_, "%.127s", props.deviceName);
    if (props.apiVersion < VK_API_VERSION_1_2)
        unavailable(std::string(props.deviceName) + " supports Vulkan " + std::to_string(VK_API_VERSION_MAJOR(props.apiVersion)) +
                    "." + std::to_string(VK_API_VERSION_MINOR(props.apiVersion)) +
                    "; the plugin needs 1.2 (timeline semaphores)");
    ctx.period_ns = static_cast<double>(props.limits.timestampPeriod);

    // A compute family, preferring one with timestamps, then a dedicated one.
    uint32_t nf = 0;
    vk.vkGetPhysicalDeviceQueueFamilyProperties(ctx.physical, &nf, nullptr);
    std::vector<VkQueueFamilyProperties> families(nf);
    vk.vkGetPhysicalDeviceQueueFamilyProperties(ctx.physical, &nf, families.data());
    int best = -1, best_score = -1;
    for (uint32_t i = 0; i < nf; ++i) {
        if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        int score = (families[i].timestampValidBits > 0 ? 2 : 0) + (!(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) ? 1 : 0);
        if (score > best_score) best = static_cast<int>(i), best_score = score;
    }
    if (best < 0) unavailable(std::string(props.deviceName) + " has no compute queue family");
    uint32_t family = static_cast<uint32_t>(best);

    VkPhysicalDeviceVulkan12Features f12{};
    f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    VkPhysicalDeviceFeatures2 f2{};
    f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    f2.pNext = &f12;
    vk.vkGetPhysicalDeviceFeatures2(ctx.physical, &f2);
    if (!f12.timelineSemaphore) unavailable(std::string(props.deviceName) + " lacks timeline semaphores");
    ctx.host_query_reset = s.host_query_reset && f12.hostQueryReset;

    // Calibrated timestamps against CLOCK_MONOTONIC, when offered.
    uint32_t ne = 0;
    vk.vkEnumerateDeviceExtensionProperties(ctx.physical, nullptr, &ne, nullptr);
    std::vector<VkExtensionProperties> exts(ne);
    vk.vkEnumerateDeviceExtensionProperties(ctx.physical, nullptr, &ne, exts.data());
    const bool calibrated = s.calibrate && has_extension(exts, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME) &&
                            offers_monotonic_calibration(vk, ctx.physical);

    uint32_t queue_count = std::min(s.queues, families[family].queueCount);
    std::vector<float> priorities(queue_count, 1.0f);
    VkDeviceQueueCreateInfo qi{};
    qi.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
    qi.queueFamilyIndex = family;
    qi.queueCount = queue_count;
    qi.pQueuePriorities = priorities.data();
    VkPhysicalDeviceVulkan12Features enable12{};
    enable12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    enable12.timelineSemaphore = VK_TRUE;
    enable12.hostQueryReset = ctx.host_query_reset ? VK_TRUE : VK_FALSE;
    const char* device_exts[] = {VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME};
    VkDeviceCreateInfo di{};
    di.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    di.pNext = &enable12;
    di.queueCreateInfoCount = 1;
    di.pQueueCreateInfos = &qi;
    di.enabledExtensionCount = calibrated ? 1 : 0;
    di.ppEnabledExtensionNames = device_exts;
    VkResult r = vk.vkCreateDevice(ctx.physical, &di, nullptr, &ctx.device);
    if (r != VK_SUCCESS) vk_throw(ctx, "open", "vkCreateDevice", r);
    if (!vk.load_device(ctx.device, why)) unavailable(why);
    if (vk.vkGetSemaphoreCounterValue == nullptr || vk.vkWaitSemaphores == nullptr || vk.vkSignalSemaphore == nullptr)
        unavailable("the Vulkan device has no timeline semaphore functions");
    if (ctx.host_query_reset && vk.vkResetQueryPool == nullptr) ctx.host_query_reset = false;
    if (calibrated && vk.vkGetCalibratedTimestampsEXT != nullptr)
        ctx.calibration.configure(vk.vkGetCalibratedTimestampsEXT, ctx.device, s.recalibrate_ns);

    queues_ = std::make_unique<QueueSlot[]>(queue_count);
    for (uint32_t i = 0; i < queue_count; ++i) vk.vkGetDeviceQueue(ctx.device, family, i, &queues_[i].queue);

    uint32_t bits = valid_bits_for(families[family].timestampValidBits);
    for (uint32_t i = 0; i < s.queues; ++i) {
        StreamConfig sc;
        sc.index = i;
        sc.family = family;
        sc.valid_bits = bits;
        sc.ring_windows = s.ring_windows;
        sc.segments = s.segments;
        sc.batch_windows = s.batch_windows;
        sc.host_work = s.host_work;
        sc.queue = &queues_[i % queue_count];  // more streams than queues: slots share a queue
        streams_[i] = std::make_unique<Stream>(ctx, sc);
        lapse_error e = sdk::make_error();
        if (lapse_status st = streams_[i]->init(&e); st != LAPSE_OK) throw sdk::Error(st, e.message);
        stream_count_.store(i + 1, std::memory_order_release);
    }
    if (VkResult r = ctx.calibration.prime(sdk::monotonic_ns()); r != VK_SUCCESS)
        vk_throw(ctx, "open", "vkGetCalibratedTimestampsEXT", r);
}

}  // namespace lapse::vulkan
