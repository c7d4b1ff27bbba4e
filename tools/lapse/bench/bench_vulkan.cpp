// The Vulkan plugin against bare Vulkan on the same physical device, in the
// same run: what a window costs a host that could have written the two
// timestamp queries itself, and what reading N closed windows costs against
// one vkGetQueryPoolResults over as many queries.
//
// The bare side opens its own instance and device (no layers) on the
// subject's physical device and calls the commands through the pointers
// vkGetDeviceProcAddr returns, as the plugin does, so neither pays the
// loader's trampolines the other skips.
//
// Recording: a batch of start+end through the C ABI (timed), resolved
// untimed, against the same number of vkCmdWriteTimestamp pairs recorded
// into an open command buffer (timed; begin, reset and end untimed).
// Readback: a batch opened, closed and synced untimed, then resolved
// (timed), against vkGetQueryPoolResults(WAIT | 64_BIT) of twice as many
// timestamps already written and waited for. Where the device offers
// lapse.resolve_compact/1 (own mode), `vulkan_readback_vs_one_query_call`
// times that call (a stamp pair per window, as the baseline reads), and
// `vulkan_readback_full_vs_one_query_call` the full resolve.
#include "internal.hpp"

#include <lapse/sdk/resolve_compact.hpp>

#include <vulkan/vulkan.h>

#include <memory>
#include <stdexcept>

namespace lapse::bench::detail {

namespace {

// A device of our own, the baseline's: one queue that can write
// timestamps, a command buffer and a query pool of 2 * batch timestamps.
class BareVulkan {
public:
    BareVulkan(const std::string& device_name, uint32_t batch) : queries_(2 * batch)
    {
        try {
            open(device_name);
        } catch (const std::exception& e) {
            error_ = e.what();
        }
    }
    ~BareVulkan()
    {
        if (device_ != VK_NULL_HANDLE) {
            vkDeviceWaitIdle(device_);
            if (pool_ != VK_NULL_HANDLE) vkDestroyQueryPool(device_, pool_, nullptr);
            if (fence_ != VK_NULL_HANDLE) vkDestroyFence(device_, fence_, nullptr);
            if (commands_ != VK_NULL_HANDLE) vkDestroyCommandPool(device_, commands_, nullptr);
            vkDestroyDevice(device_, nullptr);
        }
        if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
    }
    BareVulkan(const BareVulkan&) = delete;
    BareVulkan& operator=(const BareVulkan&) = delete;

    const std::string& error() const { return error_; }
    uint32_t queries() const { return queries_; }

    // Begins the command buffer and resets the pool in it (untimed part).
    bool begin()
    {
        if (reset_command_buffer_(cb_, 0) != VK_SUCCESS) return false;
        VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        if (begin_command_buffer_(cb_, &begin) != VK_SUCCESS) return false;
        reset_query_pool_(cb_, pool_, 0, queries_);
        return true;
    }

    // The subject of the baseline: `pairs` pairs of bare timestamps.
    void write_pairs(uint32_t pairs)
    {
        for (uint32_t i = 0; i < pairs; ++i) {
            write_timestamp_(cb_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool_, 2 * i);
            write_timestamp_(cb_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, 2 * i + 1);
        }
    }

    // Ends, submits and waits for the command buffer (untimed part).
    bool finish()
    {
        if (end_command_buffer_(cb_) != VK_SUCCESS) return false;
        VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
        submit.commandBufferCount = 1;
        submit.pCommandBuffers = &cb_;
        if (vkResetFences(device_, 1, &fence_) != VK_SUCCESS ||
            queue_submit_(queue_, 1, &submit, fence_) != VK_SUCCESS)
            return false;
        return vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX) == VK_SUCCESS;
    }

    // The readback baseline: every query of the pool in one call.
    bool read_all(uint64_t* out)
    {
        return get_query_pool_results_(device_, pool_, 0, queries_, sizeof(uint64_t) * queries_, out,
                                       sizeof(uint64_t),
                                       VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS;
    }

private:
    static void check(VkResult r, const char* what)
    {
        if (r != VK_SUCCESS) throw std::runtime_error(std::string(what) + " returned VkResult " + std::to_string(r));
    }

    template <class Fn>
    Fn device_fn(const char* name)
    {
        auto fn = reinterpret_cast<Fn>(vkGetDeviceProcAddr(device_, name));
        if (fn == nullptr) throw std::runtime_error(std::string("vkGetDeviceProcAddr(") + name + ") returned null");
        return fn;
    }

    void open(const std::string& device_name)
    {
        VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
        app.pApplicationName = "lapse bench (bare Vulkan baseline)";
        app.apiVersion = VK_API_VERSION_1_1;
        VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
        ici.pApplicationInfo = &app;
        check(vkCreateInstance(&ici, nullptr, &instance_), "vkCreateInstance");

        uint32_t count = 0;
        check(vkEnumeratePhysicalDevices(instance_, &count, nullptr), "vkEnumeratePhysicalDevices");
        std::vector<VkPhysicalDevice> physicals(count);
        check(vkEnumeratePhysicalDevices(instance_, &count, physicals.data()), "vkEnumeratePhysicalDevices");
        if (physicals.empty()) throw std::runtime_error("no Vulkan physical device");
        // The subject's device when its name is found in the plugin's
        // description; the first one (what `device = 0` opens) otherwise.
        VkPhysicalDevice physical = physicals[0];
        for (VkPhysicalDevice candidate : physicals) {
            VkPhysicalDeviceProperties props;
            vkGetPhysicalDeviceProperties(candidate, &props);
            if (!device_name.empty() && device_name.find(props.deviceName) != std::string::npos) {
                physical = candidate;
                break;
            }
        }

        uint32_t families = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, nullptr);
        std::vector<VkQueueFamilyProperties> props(families);
        vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, props.data());
        uint32_t family = UINT32_MAX;
        for (uint32_t i = 0; i < families; ++i)
            if (props[i].timestampValidBits > 0 && (props[i].queueFlags & (VK_QUEUE_COMPUTE_BIT | VK_QUEUE_GRAPHICS_BIT))) {
                family = i;
                break;
            }
        if (family == UINT32_MAX) throw std::runtime_error("no queue family of the device writes timestamps");

        const float priority = 1.0f;
        VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
        qci.queueFamilyIndex = family;
        qci.queueCount = 1;
        qci.pQueuePriorities = &priority;
        VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
        dci.queueCreateInfoCount = 1;
        dci.pQueueCreateInfos = &qci;
        check(vkCreateDevice(physical, &dci, nullptr, &device_), "vkCreateDevice");
        vkGetDeviceQueue(device_, family, 0, &queue_);

        write_timestamp_ = device_fn<PFN_vkCmdWriteTimestamp>("vkCmdWriteTimestamp");
        reset_query_pool_ = device_fn<PFN_vkCmdResetQueryPool>("vkCmdResetQueryPool");
        get_query_pool_results_ = device_fn<PFN_vkGetQueryPoolResults>("vkGetQueryPoolResults");
        begin_command_buffer_ = device_fn<PFN_vkBeginCommandBuffer>("vkBeginCommandBuffer");
        end_command_buffer_ = device_fn<PFN_vkEndCommandBuffer>("vkEndCommandBuffer");
        reset_command_buffer_ = device_fn<PFN_vkResetCommandBuffer>("vkResetCommandBuffer");
        queue_submit_ = device_fn<PFN_vkQueueSubmit>("vkQueueSubmit");

        VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
        pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
        pci.queueFamilyIndex = family;
        check(vkCreateCommandPool(device_, &pci, nullptr, &commands_), "vkCreateCommandPool");
        VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
        cai.commandPool = commands_;
        cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        cai.commandBufferCount = 1;
        check(vkAllocateCommandBuffers(device_, &cai, &cb_), "vkAllocateCommandBuffers");
        VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        check(vkCreateFence(device_, &fci, nullptr, &fence_), "vkCreateFence");
        VkQueryPoolCreateInfo qpci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        qpci.queryType = VK_QUERY_TYPE_TIMESTAMP;
        qpci.queryCount = queries_;
        check(vkCreateQueryPool(device_, &qpci, nullptr, &pool_), "vkCreateQueryPool");

        // Leave every query written, for the first readback.
        if (!begin()) throw std::runtime_error("vkBeginCommandBuffer failed");
        write_pairs(queries_ / 2);
        if (!finish()) throw std::runtime_error("the first submit of the timestamps failed");
    }

    uint32_t queries_;
    std::string error_;
    VkInstance instance_ = VK_NULL_HANDLE;
    VkDevice device_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    VkCommandPool commands_ = VK_NULL_HANDLE;
    VkCommandBuffer cb_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    VkQueryPool pool_ = VK_NULL_HANDLE;
    PFN_vkCmdWriteTimestamp write_timestamp_ = nullptr;
    PFN_vkCmdResetQueryPool reset_query_pool_ = nullptr;
    PFN_vkGetQueryPoolResults get_query_pool_results_ = nullptr;
    PFN_vkBeginCommandBuffer begin_command_buffer_ = nullptr;
    PFN_vkEndCommandBuffer end_command_buffer_ = nullptr;
    PFN_vkResetCommandBuffer reset_command_buffer_ = nullptr;
    PFN_vkQueueSubmit queue_submit_ = nullptr;
};

void bare_stamps(benchmark::State& st, BareVulkan& bare, uint32_t batch)
{
    for (auto _ : st) {
        if (!bare.begin()) {
            st.SkipWithError("vkBeginCommandBuffer failed");
            return;
        }
        const auto t0 = Clock::now();
        bare.write_pairs(batch);
        const auto t1 = Clock::now();
        st.SetIterationTime(seconds_between(t0, t1));
        if (!bare.finish()) {
            st.SkipWithError("submitting the bare timestamps failed");
            return;
        }
    }
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * batch);
}

void plugin_windows(benchmark::State& st, const Device& dev, uint32_t batch)
{
    std::vector<lapse_token> tokens(batch);
    std::vector<lapse_duration> out = duration_array(batch);
    std::string message;
    for (auto _ : st) {
        const auto t0 = Clock::now();
        const bool opened = open_close(dev, 0, tokens.data(), batch, message);
        const auto t1 = Clock::now();
        if (!opened || !resolve_all(dev, tokens.data(), out.data(), batch, message)) {
            st.SkipWithError(message.c_str());
            return;
        }
        st.SetIterationTime(seconds_between(t0, t1));
    }
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * batch);
}

void bare_readback(benchmark::State& st, BareVulkan& bare)
{
    std::vector<uint64_t> stamps(bare.queries());
    for (auto _ : st) {
        const auto t0 = Clock::now();
        const bool ok = bare.read_all(stamps.data());
        const auto t1 = Clock::now();
        if (!ok) {
            st.SkipWithError("vkGetQueryPoolResults failed");
            return;
        }
        benchmark::DoNotOptimize(stamps.data());
        st.SetIterationTime(seconds_between(t0, t1));
    }
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * bare.queries() / 2);
}

// `compact`: through lapse.resolve_compact/1, else the full resolve.
void plugin_readback(benchmark::State& st, const Device& dev, uint32_t batch, const lapse_resolve_compact* compact)
{
    std::vector<lapse_token> tokens(batch);
    std::vector<lapse_duration> out = duration_array(batch);
    // Value-initialised, so their pages are touched before timing.
    std::vector<lapse_stamp_pair> stamps(batch);
    std::vector<uint8_t> states(batch);
    std::string message;
    for (auto _ : st) {
        if (!open_close(dev, 0, tokens.data(), batch, message)) {
            st.SkipWithError(message.c_str());
            return;
        }
        if (dev.plugin().sync(dev.handle(), 0, nullptr) != LAPSE_OK) {
            st.SkipWithError("sync failed");
            return;
        }
        const auto t0 = Clock::now();
        const bool ok = compact != nullptr ? resolve_compact_all(dev, *compact, tokens.data(), stamps.data(),
                                                                 states.data(), batch, message)
                                           : resolve_all(dev, tokens.data(), out.data(), batch, message);
        const auto t1 = Clock::now();
        if (!ok) {
            st.SkipWithError(message.c_str());
            return;
        }
        st.SetIterationTime(seconds_between(t0, t1));
    }
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * batch);
}

}  // namespace

void add_vulkan(Context& ctx, std::vector<FigureSpec>& figures)
{
    std::string unavailable;
    std::shared_ptr<BareVulkan> bare;
    const lapse_resolve_compact* compact = nullptr;
    if (ctx.plugin != "vulkan") {
        unavailable = "the subject is the '" + ctx.plugin +
                      "' plugin, not vulkan (lapse bench --config examples/vulkan.toml measures it)";
    } else {
        bare = std::make_shared<BareVulkan>(ctx.subject.info().name, ctx.batch);
        if (!bare->error().empty()) unavailable = "the bare Vulkan baseline could not open: " + bare->error();
        compact = sdk::resolve_compact_of(&ctx.subject.plugin(), ctx.subject.handle());
    }

    if (unavailable.empty()) {
        const double mt = ctx.min_time;
        auto manual = [&](benchmark::internal::Benchmark* b) { b->UseManualTime()->MinTime(mt); };
        manual(add("vulkan.plugin_windows",
                   [&ctx](benchmark::State& st) { plugin_windows(st, ctx.subject, ctx.batch); }));
        manual(add("vulkan.bare_stamps", [&ctx, bare](benchmark::State& st) { bare_stamps(st, *bare, ctx.batch); }));
        // A readback iteration records, submits and syncs its batch
        // untimed, hundreds of times longer than the timed read: a fixed
        // count of batches, not a minimum of timed seconds, bounds the run.
        const int64_t readbacks = ctx.quick ? 20 : 200;
        add("vulkan.plugin_readback",
            [&ctx](benchmark::State& st) { plugin_readback(st, ctx.subject, ctx.batch, nullptr); })
            ->UseManualTime()
            ->Iterations(readbacks);
        if (compact != nullptr)
            add("vulkan.plugin_readback_compact",
                [&ctx, compact](benchmark::State& st) { plugin_readback(st, ctx.subject, ctx.batch, compact); })
                ->UseManualTime()
                ->Iterations(readbacks);
        manual(add("vulkan.bare_readback", [bare](benchmark::State& st) { bare_readback(st, *bare); }));
    }

    {
        FigureSpec f = time_ratio_at_most(
            "vulkan_window_vs_two_bare_stamps",
            "vulkan window start+end, C ABI, no resolve",
            "two vkCmdWriteTimestamp into an open command buffer",
            1.5,
            "vulkan.plugin_windows",
            "vulkan.bare_stamps",
            ctx.batch);
        f.unavailable = unavailable;
        figures.push_back(f);
    }
    const std::string windows = std::to_string(ctx.batch) + " closed, synced windows";
    FigureSpec f = time_ratio_at_most(
        "vulkan_readback_vs_one_query_call",
        compact != nullptr      ? "vulkan resolve of " + windows + " into stamp pairs (lapse.resolve_compact/1)"
        : unavailable.empty()   ? "vulkan resolve of " + windows + " (the device offers no lapse.resolve_compact/1)"
                                : "vulkan resolve of " + windows,
        "one vkGetQueryPoolResults of as many timestamp pairs",
        1.2,
        compact != nullptr ? "vulkan.plugin_readback_compact" : "vulkan.plugin_readback",
        "vulkan.bare_readback",
        ctx.batch);
    f.unavailable = unavailable;
    figures.push_back(f);
    FigureSpec full = time_ratio_at_most("vulkan_readback_full_vs_one_query_call",
                                         "vulkan resolve of " + windows + " into full durations",
                                         "one vkGetQueryPoolResults of as many timestamp pairs", 1.2,
                                         "vulkan.plugin_readback", "vulkan.bare_readback", ctx.batch);
    full.unavailable = unavailable;
    figures.push_back(full);
}

}  // namespace lapse::bench::detail
