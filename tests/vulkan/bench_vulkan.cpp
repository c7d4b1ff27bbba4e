// Host-side cost of the Vulkan plugin, as ratios against a floor measured
// in the same run (these machines are shared and noisy):
//
//   BM_BareTimestamps   two vkCmdWriteTimestamp into a command buffer: the floor
//   BM_WindowStartEnd   profile_start + profile_end through the C ABI
//   BM_ResolveBatch     resolve of 4096 closed, completed windows (items/s)
//
// Run: LP_NUM_THREADS=0 build-x/bin/bench_vulkan --benchmark_repetitions=5
//      --benchmark_report_aggregates_only=true
// Both recording benchmarks submit their command buffers every 4096
// windows outside the timed region, so what is compared is recording.
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
    uint32_t i = 0;
    for (auto _ : state) {
        vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool, 2 * i);
        vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, 2 * i + 1);
        if (++i == kBatch) {
            state.PauseTiming();
            // Run what was recorded (the plugin's queue is idle: nothing of
            // its own is in flight here), then start a fresh buffer.
            vkEndCommandBuffer(cb);
            vkResetCommandPool(vk, cmd_pool, 0);
            vkResetQueryPool(vk, pool, 0, 2 * kBatch);
            vkBeginCommandBuffer(cb, &bi);
            i = 0;
            state.ResumeTiming();
        }
    }
    vkEndCommandBuffer(cb);
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

BENCHMARK(BM_BareTimestamps);
BENCHMARK(BM_WindowStartEnd);
BENCHMARK(BM_ResolveBatch)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
