// Host-side cost of the Vulkan plugin, as ratios against a floor measured
// in the same run (these machines are shared and noisy):
//
//   BM_BareTimestamps/0  two vkCmdWriteTimestamp into a command buffer (recording only)
//   BM_BareTimestamps/1  the same, plus the vkQueueSubmit every 4096 pairs that
//                        gets them to the device
//   BM_BareTimestamps/2  the same, plus resetting and beginning the command
//                        buffer for the next 4096 pairs: the floor the plugin
//                        is held to, since it does all three in its timed path
//                        (a new segment's reset and begin run in the
//                        profile_start that needs it; lavapipe frees each
//                        recorded command on reset, a real cost per window)
//   BM_WindowStartEnd    profile_start + profile_end through the C ABI (the plugin
//                        submits its segment every 4096 windows, batch_windows)
//   BM_ResolveBatch      resolve of 4096 closed, completed windows (items/s)
//
// Run: LP_NUM_THREADS=0 build-x/bin/bench_vulkan --benchmark_repetitions=5
//      --benchmark_report_aggregates_only=true
// Compare CPU time (the machine is shared: wall time includes waiting for a
// core). lavapipe is a CPU device that runs a submission's commands largely
// on the submitting thread, so a vkQueueSubmit of 8192 timestamps costs
// real CPU here; /1 and /2 charge the floor the same submit and recycle the
// plugin pays.
#include "plugin_fixture.hpp"

#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

using namespace lapse::test;

namespace {

constexpr uint32_t kBatch = 4096;

OpenDevice& device()
{
    static OpenDevice dev(TestHost::Config{{"ring_size", int64_t{2 * kBatch}},
                                           {"batch_windows", int64_t{kBatch}},
                                           {"validation", false}});
    if (dev.open_status() != LAPSE_OK) throw std::runtime_error(dev.open_message());
    return dev;
}

void BM_BareTimestamps(benchmark::State& state)
{
    OpenDevice& dev = device();
    lapse_vulkan_handles h{};
    h.struct_size = sizeof h;
    dev.commands()->handles(dev.get(), 0, &h, nullptr);
    VkDevice vk = h.device;
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, nullptr, 0, VK_QUERY_TYPE_TIMESTAMP, 2 * kBatch, 0};
    VkQueryPool pool;
    vkCreateQueryPool(vk, &qi, nullptr, &pool);
    vkResetQueryPool(vk, pool, 0, 2 * kBatch);
    VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, nullptr, VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
                               h.queue_family_index};
    VkCommandPool cmd_pool;
    vkCreateCommandPool(vk, &pi, nullptr, &cmd_pool);
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, nullptr, cmd_pool,
                                   VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
    VkCommandBuffer cb;
    vkAllocateCommandBuffers(vk, &ai, &cb);
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, nullptr,
                                VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, nullptr};
    vkBeginCommandBuffer(cb, &bi);
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, nullptr, 0};
    VkFence fence;
    vkCreateFence(vk, &fi, nullptr, &fence);
    const bool submit = state.range(0) != 0;
    const bool recycle = state.range(0) == 2;
    uint32_t i = 0;
    for (auto _ : state) {
        vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool, 2 * i);
        vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, 2 * i + 1);
        if (++i == kBatch) {
            vkEndCommandBuffer(cb);
            if (submit) {
                // The plugin's queue is idle (this benchmark runs alone), so
                // submitting to it directly does not race the plugin.
                VkSubmitInfo si{};
                si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
                si.commandBufferCount = 1;
                si.pCommandBuffers = &cb;
                vkQueueSubmit(h.queue, 1, &si, fence);
            }
            state.PauseTiming();
            if (submit) {
                vkWaitForFences(vk, 1, &fence, VK_TRUE, UINT64_MAX);
                vkResetFences(vk, 1, &fence);
            }
            vkResetQueryPool(vk, pool, 0, 2 * kBatch);
            if (recycle) state.ResumeTiming();
            vkResetCommandPool(vk, cmd_pool, 0);
            vkBeginCommandBuffer(cb, &bi);
            i = 0;
            if (!recycle) state.ResumeTiming();
        }
    }
    vkEndCommandBuffer(cb);
    vkDestroyFence(vk, fence, nullptr);
    vkDestroyCommandPool(vk, cmd_pool, nullptr);
    vkDestroyQueryPool(vk, pool, nullptr);
    state.SetItemsProcessed(state.iterations());
}

void BM_WindowStartEnd(benchmark::State& state)
{
    OpenDevice& dev = device();
    std::vector<lapse_token> tokens(kBatch);
    std::vector<lapse_duration> out(kBatch, make_duration());
    uint32_t i = 0;
    for (auto _ : state) {
        dev.start(0, tokens[i]);
        dev.end(tokens[i]);
        if (++i == kBatch) {
            state.PauseTiming();
            dev.resolve(tokens.data(), out.data(), kBatch, LAPSE_WAIT_FOREVER);
            i = 0;
            state.ResumeTiming();
        }
    }
    dev.resolve(tokens.data(), out.data(), i, LAPSE_WAIT_FOREVER);
    state.SetItemsProcessed(state.iterations());
}

void BM_ResolveBatch(benchmark::State& state)
{
    OpenDevice& dev = device();
    std::vector<lapse_token> tokens(kBatch);
    std::vector<lapse_duration> out(kBatch, make_duration());
    for (auto _ : state) {
        state.PauseTiming();
        for (auto& t : tokens) {
            dev.start(0, t);
            dev.end(t);
        }
        dev.sync(0);
        state.ResumeTiming();
        lapse_status st = dev.resolve(tokens.data(), out.data(), kBatch, LAPSE_WAIT_FOREVER);
        if (st != LAPSE_OK) state.SkipWithError("resolve failed");
        benchmark::DoNotOptimize(out.data());
    }
    state.SetItemsProcessed(state.iterations() * kBatch);
}

}  // namespace

BENCHMARK(BM_BareTimestamps)->Arg(0)->Arg(1)->Arg(2);
BENCHMARK(BM_WindowStartEnd);
BENCHMARK(BM_ResolveBatch)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
