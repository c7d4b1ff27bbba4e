#include "device.hpp"

#include "timestamp_math.hpp"
#include "token.hpp"

#include <lapse/sdk/duration.hpp>
#include <lapse/sdk/error.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cstring>
#include <string>
#include <thread>
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

Device::Device(const lapse_host* host) : ctx_(std::make_unique<DeviceContext>(host)) {}

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

// ---------------------------------------------------------------------------
// Open (own mode)

std::unique_ptr<Device> Device::open(sdk::Host host, sdk::Config config)
{
    auto device = std::make_unique<Device>(host.get());
    device->settings_ = read_settings(config);
    device->ctx_->start_stage = device->settings_.start_stage;
    if (device->settings_.attach) {
        device->ctx_->own = false;
        std::snprintf(device->name_, sizeof device->name_, "vulkan (attach mode, not attached yet)");
        return device;
    }
    device->open_own(device->settings_);
    return device;
}

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
    bool calibrated = false;
    if (s.calibrate && has_extension(exts, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME) &&
        vk.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT != nullptr) {
        uint32_t nd = 0;
        vk.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT(ctx.physical, &nd, nullptr);
        std::vector<VkTimeDomainEXT> domains(nd);
        vk.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT(ctx.physical, &nd, domains.data());
        bool dev = false, mono = false;
        for (auto d : domains) {
            dev = dev || d == VK_TIME_DOMAIN_DEVICE_EXT;
            mono = mono || d == VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
        }
        calibrated = dev && mono;
    }

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
    if (ctx.calibration.enabled()) {
        CalibrationPoint p;
        VkResult failure;
        if (!ctx.calibration.current(sdk::monotonic_ns(), p, failure)) vk_throw(ctx, "open", "vkGetCalibratedTimestampsEXT", failure);
    }
}

Device::~Device()
{
    uint32_t n = stream_count_.load();
    uint64_t live = 0;
    for (uint32_t i = 0; i < n; ++i) live += streams_[i]->shutdown();
    if (live > 0)
        ctx_->host.warn("vulkan: close: abandoned " + std::to_string(live) +
                        " window(s) still open or closed and never resolved");
    // Streams (query pools, command pools) go before the device; this also
    // covers a stream whose init failed during open.
    for (auto& s : streams_) s.reset();
    VkApi& vk = ctx_->api;
    if (ctx_->own) {
        if (ctx_->device != VK_NULL_HANDLE) {
            if (!ctx_->is_lost()) vk.vkDeviceWaitIdle(ctx_->device);
            vk.vkDestroyDevice(ctx_->device, nullptr);
        }
        if (messenger_ != VK_NULL_HANDLE) vk.vkDestroyDebugUtilsMessengerEXT(ctx_->instance, messenger_, nullptr);
        if (ctx_->instance != VK_NULL_HANDLE) vk.vkDestroyInstance(ctx_->instance, nullptr);
    }
}

// ---------------------------------------------------------------------------
// Generic ABI

void Device::describe(lapse_device_info& info)
{
    uint32_t n = stream_count_.load(std::memory_order_acquire);
    info.stream_count = n;
    uint64_t caps = LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING | LAPSE_CAP_SPLIT_THREADS;
    if (n > 0 && streams_[0]->has_clock()) {
        caps |= LAPSE_CAP_DEVICE_CLOCK;
        if (ctx_->calibration.enabled()) caps |= LAPSE_CAP_HOST_TIMELINE;
    }
    info.capabilities = caps;
    std::snprintf(info.name, sizeof info.name, "%s", name_);
}

lapse_status Device::sync(lapse_stream index, lapse_error* error)
{
    if (index == LAPSE_ALL_STREAMS) {
        uint32_t n = stream_count_.load(std::memory_order_acquire);
        for (uint32_t i = 0; i < n; ++i)
            if (streams_[i]->own())
                if (lapse_status st = streams_[i]->sync(error); st != LAPSE_OK) return st;
        return LAPSE_OK;
    }
    Stream* s = stream(index);
    if (s == nullptr)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: sync: stream %u does not exist (the device has %u)",
                          index, stream_count_.load());
    if (!s->own())
        return sdk::failf(error, LAPSE_ERROR_UNSUPPORTED,
                          "vulkan: sync: stream %u is attached: the host owns its queue and waits on it itself", index);
    return s->sync(error);
}

lapse_status Device::submit(lapse_stream index, lapse_work_fn fn, void* user, lapse_error* error)
{
    Stream* s = stream(index);
    if (s == nullptr)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                          "vulkan: submit: stream %u does not exist (the device has %u)", index, stream_count_.load());
    if (!s->own())
        return sdk::failf(error, LAPSE_ERROR_UNSUPPORTED,
                          "vulkan: submit: stream %u is attached: record into your own command buffers", index);
    return s->submit(fn, user, error);
}

lapse_status Device::profile_start(lapse_stream index, lapse_token& token, lapse_error* error)
{
    Stream* s = stream(index);
    if (s == nullptr)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                          "vulkan: profile_start: stream %u does not exist (the device has %u)", index,
                          stream_count_.load());
    if (!s->own())
        return sdk::failf(error, LAPSE_ERROR_UNSUPPORTED,
                          "vulkan: profile_start: stream %u is attached: use cmd_profile_start of " LAPSE_VULKAN_COMMANDS_ID,
                          index);
    if (!s->has_clock()) return LAPSE_NO_WINDOW;  // no timestamps on this queue: measure in system time
    return s->start(token, error);
}

Stream* Device::token_stream(lapse_token token, uint64_t& position, const char* operation, lapse_error* error,
                             lapse_status& status)
{
    uint32_t index = 0;
    Stream* s = nullptr;
    if (decode_token_id(token.id, position, index)) s = stream(index);
    if (s == nullptr) {
        status = sdk::failf(error, LAPSE_ERROR_INVALID_TOKEN, "vulkan: %s: token %" PRIu64 " was not issued by this device",
                            operation, token.id);
        return nullptr;
    }
    if (token.opened_on != index) {
        if (s->has_window(position))
            status = sdk::failf(error, LAPSE_ERROR_WRONG_STREAM,
                                "vulkan: %s: token %" PRIu64 " says opened_on = %u but its window was opened on stream %u",
                                operation, token.id, token.opened_on, index);
        else
            status = sdk::failf(error, LAPSE_ERROR_INVALID_TOKEN,
                                "vulkan: %s: token %" PRIu64 " (stream %u) names no open window", operation, token.id,
                                token.opened_on);
        return nullptr;
    }
    return s;
}

lapse_status Device::profile_end(lapse_token token, uint32_t flags, lapse_error* error)
{
    // LAPSE_END_FLUSH is accepted and has nothing to do: the end stamp is
    // recorded after every command already handed to the stream, and
    // submit() never holds work back.
    if ((flags & ~static_cast<uint32_t>(LAPSE_END_FLUSH)) != 0)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: profile_end: unknown flags 0x%x", flags);
    uint64_t position = 0;
    lapse_status status = LAPSE_OK;
    Stream* s = token_stream(token, position, "profile_end", error, status);
    if (s == nullptr) return status;
    if (!s->own())
        return sdk::failf(error, LAPSE_ERROR_UNSUPPORTED,
                          "vulkan: profile_end: stream %u is attached: use cmd_profile_end of " LAPSE_VULKAN_COMMANDS_ID,
                          token.opened_on);
    return s->end(position, token, error);
}

void Device::profile_abandon(lapse_token token) noexcept
{
    uint64_t position = 0;
    uint32_t index = 0;
    if (!decode_token_id(token.id, position, index) || index != token.opened_on) return;
    if (Stream* s = stream(index)) s->abandon(position);
}

lapse_status Device::resolve(const lapse_token* tokens, lapse_duration* out, uint32_t count, uint64_t timeout_ns,
                             lapse_error* error)
{
    const int64_t begin = sdk::monotonic_ns();
    const bool forever = timeout_ns == LAPSE_WAIT_FOREVER;
    const int64_t deadline =
        forever || timeout_ns > static_cast<uint64_t>(INT64_MAX - begin) ? INT64_MAX : begin + static_cast<int64_t>(timeout_ns);

    for (uint32_t i = 0; i < count; ++i) {
        uint32_t size = out[i].struct_size;
        std::memset(&out[i], 0, sizeof(lapse_duration));
        out[i].struct_size = size;
        out[i].state = LAPSE_DURATION_PENDING;
    }
    Placement place;
    if (ctx_->calibration.enabled()) {
        VkResult failure;
        place.host_timeline = ctx_->calibration.current(begin, place.point, failure);
        if (failure == VK_ERROR_DEVICE_LOST) ctx_->lost.store(LAPSE_ERROR_DEVICE);
    }

    lapse_status first_error = LAPSE_OK;
    uint64_t sleep_ns = 20000;
    for (;;) {
        ResolveProgress progress[kMaxOwnStreams];
        uint32_t pending = 0;
        for (uint32_t i = 0; i < count;) {
            if (out[i].state != LAPSE_DURATION_PENDING) {
                ++i;
                continue;
            }
            uint64_t position = 0;
            uint32_t index = 0;
            Stream* s = decode_token_id(tokens[i].id, position, index) ? stream(index) : nullptr;
            if (s == nullptr) {
                lapse_error local = sdk::make_error();
                lapse_status st = sdk::failf(first_error == LAPSE_OK ? error : &local, LAPSE_ERROR_INVALID_TOKEN,
                                             "vulkan: resolve: token %" PRIu64 " was not issued by this device",
                                             tokens[i].id);
                if (first_error == LAPSE_OK) first_error = st;
                sdk::set_failed(out[i], st);
                ++i;
                continue;
            }
            // A run of tokens of the same stream goes in one pass (and its
            // consecutive windows in one readback).
            uint32_t j = i + 1;
            for (; j < count; ++j) {
                uint64_t p2;
                uint32_t s2;
                if (!decode_token_id(tokens[j].id, p2, s2) || s2 != index) break;
            }
            lapse_status st = s->resolve_pass(tokens + i, out + i, j - i, place, progress[index],
                                              first_error == LAPSE_OK ? error : nullptr);
            if (first_error == LAPSE_OK && st != LAPSE_OK) first_error = st;
            i = j;
        }
        uint32_t n = stream_count_.load(std::memory_order_acquire);
        for (uint32_t k = 0; k < n; ++k) pending += progress[k].pending;
        if (pending == 0) break;
        int64_t now = sdk::monotonic_ns();
        if (now >= deadline) break;

        // Wait for the device: on the timeline semaphore where a window's
        // segment is submitted, else poll with a short sleep (attach mode,
        // or an end still behind another thread's submit callback).
        bool waited = false, stuck = false;
        for (uint32_t k = 0; k < n && !waited; ++k) {
            if (progress[k].pending == 0) continue;
            if (streams_[k]->in_own_callback()) {
                // Called from this stream's own submit callback or host
                // work: what is pending may be waiting for the very code
                // that called us. Poll only, never wait.
                stuck = true;
            } else if (progress[k].wait_serial != 0) {
                uint64_t remaining = deadline == INT64_MAX ? UINT64_MAX : static_cast<uint64_t>(deadline - now);
                lapse_error local = sdk::make_error();
                lapse_status st = streams_[k]->wait_serial(progress[k].wait_serial, remaining,
                                                           first_error == LAPSE_OK ? error : &local);
                if (st < 0) {
                    if (first_error == LAPSE_OK) first_error = st;
                    stuck = true;  // the next pass marks the windows FAILED (device lost)
                }
                waited = true;
            }
        }
        if (stuck && !ctx_->is_lost()) break;
        if (!waited && !stuck) {
            int64_t left = deadline - sdk::monotonic_ns();
            if (left <= 0) continue;
            std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(left, static_cast<int64_t>(sleep_ns))));
            sleep_ns = std::min<uint64_t>(sleep_ns * 2, 1000000);
        }
    }
    if (first_error != LAPSE_OK) return first_error;
    for (uint32_t i = 0; i < count; ++i)
        if (out[i].state == LAPSE_DURATION_PENDING) return LAPSE_NOT_READY;
    return LAPSE_OK;
}

// ---------------------------------------------------------------------------
// lapse.vulkan.commands/1

namespace {

Device* self(lapse_device* d) noexcept { return reinterpret_cast<Device*>(d); }

lapse_status ext_attach(lapse_device* d, const lapse_vulkan_attach_info* info, lapse_stream* stream, lapse_error* e) noexcept
{
    if (d == nullptr) return sdk::fail(e, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: attach: device is null");
    try {
        return self(d)->attach(info, stream, e);
    } catch (...) {
        return sdk::status_from_current_exception(e, "vulkan: attach");
    }
}

lapse_status ext_cmd_start(lapse_device* d, VkCommandBuffer cb, lapse_stream stream, lapse_token* token,
                           lapse_error* e) noexcept
{
    if (d == nullptr) return sdk::fail(e, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: cmd_profile_start: device is null");
    try {
        return self(d)->cmd_profile_start(cb, stream, token, e);
    } catch (...) {
        return sdk::status_from_current_exception(e, "vulkan: cmd_profile_start");
    }
}

lapse_status ext_cmd_end(lapse_device* d, VkCommandBuffer cb, lapse_token token, lapse_error* e) noexcept
{
    if (d == nullptr) return sdk::fail(e, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: cmd_profile_end: device is null");
    try {
        return self(d)->cmd_profile_end(cb, token, e);
    } catch (...) {
        return sdk::status_from_current_exception(e, "vulkan: cmd_profile_end");
    }
}

lapse_status ext_handles(lapse_device* d, lapse_stream stream, lapse_vulkan_handles* out, lapse_error* e) noexcept
{
    if (d == nullptr) return sdk::fail(e, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: handles: device is null");
    try {
        return self(d)->handles(stream, out, e);
    } catch (...) {
        return sdk::status_from_current_exception(e, "vulkan: handles");
    }
}

uint64_t ext_validation_count(lapse_device* d) noexcept { return d ? self(d)->validation_message_count() : 0; }

const lapse_vulkan_commands kCommands = {
    sizeof(lapse_vulkan_commands), 0, &ext_attach, &ext_cmd_start, &ext_cmd_end, &ext_handles, &ext_validation_count,
};

}  // namespace

const void* Device::extension(std::string_view id)
{
    if (id == LAPSE_VULKAN_COMMANDS_ID) return &kCommands;
    return nullptr;
}

uint64_t Device::validation_message_count() const noexcept
{
    return ctx_->validation_messages.load(std::memory_order_relaxed);
}

lapse_status Device::attach(const lapse_vulkan_attach_info* info, lapse_stream* out_stream, lapse_error* error)
{
    if (info == nullptr || out_stream == nullptr)
        return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: attach: null argument");
    if (info->struct_size < sizeof(lapse_vulkan_attach_info))
        return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: attach: lapse_vulkan_attach_info is too short");
    if (ctx_->own)
        return sdk::fail(error, LAPSE_ERROR_UNSUPPORTED,
                         "vulkan: attach: this device was opened in own mode; open one with mode = \"attach\"");
    if (info->instance == VK_NULL_HANDLE || info->physical_device == VK_NULL_HANDLE || info->device == VK_NULL_HANDLE ||
        info->queue == VK_NULL_HANDLE)
        return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: attach: instance, physical device, device and queue are required");
    uint32_t n = stream_count_.load();
    if (n >= kMaxAttachStreams)
        return sdk::failf(error, LAPSE_ERROR_CAPACITY, "vulkan: attach: at most %u queues can be attached", kMaxAttachStreams);
    if (!info->host_query_reset_enabled)
        return sdk::fail(error, LAPSE_ERROR_UNSUPPORTED,
                         "vulkan: attach: enable hostQueryReset (VkPhysicalDeviceVulkan12Features or "
                         "VK_EXT_host_query_reset) on your VkDevice: in attach mode the plugin cannot see when your "
                         "command buffers complete, so it resets freed queries on the host");
    DeviceContext& ctx = *ctx_;
    VkApi& vk = ctx.api;
    std::string why;
    if (n == 0) {
        if (!vk.load_loader(info->get_instance_proc_addr, why)) return sdk::fail(error, LAPSE_ERROR_UNAVAILABLE, "vulkan: attach: " + why);
        if (!vk.load_instance(info->instance, why)) return sdk::fail(error, LAPSE_ERROR_UNAVAILABLE, "vulkan: attach: " + why);
        if (!vk.load_device(info->device, why)) return sdk::fail(error, LAPSE_ERROR_UNAVAILABLE, "vulkan: attach: " + why);
        if (vk.vkResetQueryPool == nullptr)
            return sdk::fail(error, LAPSE_ERROR_UNSUPPORTED, "vulkan: attach: the device has no vkResetQueryPool");
        ctx.instance = info->instance;
        ctx.physical = info->physical_device;
        ctx.device = info->device;
        ctx.host_query_reset = true;
        VkPhysicalDeviceProperties props;
        vk.vkGetPhysicalDeviceProperties(ctx.physical, &props);
        ctx.period_ns = static_cast<double>(props.limits.timestampPeriod);
        std::snprintf(name_, sizeof name_, "%.127s", props.deviceName);
        if (info->calibrated_timestamps_enabled && settings_.calibrate && vk.vkGetCalibratedTimestampsEXT != nullptr &&
            vk.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT != nullptr) {
            uint32_t nd = 0;
            vk.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT(ctx.physical, &nd, nullptr);
            std::vector<VkTimeDomainEXT> domains(nd);
            vk.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT(ctx.physical, &nd, domains.data());
            bool dev = std::find(domains.begin(), domains.end(), VK_TIME_DOMAIN_DEVICE_EXT) != domains.end();
            bool mono = std::find(domains.begin(), domains.end(), VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT) != domains.end();
            if (dev && mono) ctx.calibration.configure(vk.vkGetCalibratedTimestampsEXT, ctx.device, settings_.recalibrate_ns);
        }
    } else if (info->device != ctx.device) {
        return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: attach: every attached queue must belong to the same VkDevice");
    }
    uint32_t nf = 0;
    vk.vkGetPhysicalDeviceQueueFamilyProperties(ctx.physical, &nf, nullptr);
    if (info->queue_family_index >= nf)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: attach: queue family %u does not exist (the device has %u)",
                          info->queue_family_index, nf);
    std::vector<VkQueueFamilyProperties> families(nf);
    vk.vkGetPhysicalDeviceQueueFamilyProperties(ctx.physical, &nf, families.data());

    StreamConfig sc;
    sc.index = n;
    sc.family = info->queue_family_index;
    sc.valid_bits = valid_bits_for(families[sc.family].timestampValidBits);
    sc.ring_windows = settings_.ring_windows;
    sc.attached_queue = info->queue;
    auto s = std::make_unique<Stream>(ctx, sc);
    if (lapse_status st = s->init(error); st != LAPSE_OK) return st;
    streams_[n] = std::move(s);
    stream_count_.store(n + 1, std::memory_order_release);
    if (ctx.calibration.enabled()) {
        CalibrationPoint p;
        VkResult failure;
        if (!ctx.calibration.current(sdk::monotonic_ns(), p, failure))
            return ctx.vk_fail(error, "attach", "vkGetCalibratedTimestampsEXT", failure);
    }
    *out_stream = n;
    return LAPSE_OK;
}

lapse_status Device::cmd_profile_start(VkCommandBuffer cb, lapse_stream index, lapse_token* token, lapse_error* error)
{
    if (cb == VK_NULL_HANDLE || token == nullptr)
        return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: cmd_profile_start: null command buffer or token");
    Stream* s = stream(index);
    if (s == nullptr)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                          "vulkan: cmd_profile_start: stream %u does not exist (the device has %u)", index,
                          stream_count_.load());
    if (!s->has_clock()) return LAPSE_NO_WINDOW;
    return s->cmd_start(cb, *token, error);
}

lapse_status Device::cmd_profile_end(VkCommandBuffer cb, lapse_token token, lapse_error* error)
{
    if (cb == VK_NULL_HANDLE)
        return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: cmd_profile_end: null command buffer");
    uint64_t position = 0;
    lapse_status status = LAPSE_OK;
    Stream* s = token_stream(token, position, "cmd_profile_end", error, status);
    if (s == nullptr) return status;
    return s->cmd_end(cb, position, token, error);
}

lapse_status Device::handles(lapse_stream index, lapse_vulkan_handles* out, lapse_error* error)
{
    if (out == nullptr || out->struct_size < sizeof(lapse_vulkan_handles))
        return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: handles: null or short lapse_vulkan_handles");
    Stream* s = stream(index);
    if (s == nullptr)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: handles: stream %u does not exist (the device has %u)",
                          index, stream_count_.load());
    uint32_t size = out->struct_size;
    std::memset(out, 0, sizeof *out);
    out->struct_size = size;
    out->queue_family_index = s->family();
    out->instance = ctx_->instance;
    out->physical_device = ctx_->physical;
    out->device = ctx_->device;
    out->queue = s->queue();
    out->get_instance_proc_addr = ctx_->api.vkGetInstanceProcAddr;
    out->timestamp_valid_bits = s->valid_bits();
    out->timestamp_period_ns = ctx_->period_ns;
    return LAPSE_OK;
}

}  // namespace lapse::vulkan
