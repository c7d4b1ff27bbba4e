// GPU phases of the `lapse run` demo: the seam for backends whose streams
// carry a native context. A phase here checks for the extension it needs
// and records its work through the `native` pointer submit hands it; on
// other backends it is simply not added (the CPU phases run everywhere).
//
// The Vulkan phase is compiled only when the Vulkan plugin is built
// (LAPSE_HAVE_VULKAN_PHASE, see CMakeLists.txt), so `lapse` still builds
// on a machine without the Vulkan headers.
#include "demo_workload.hpp"

#ifdef LAPSE_HAVE_VULKAN_PHASE
#include "busy_kernel.hpp"  // the busy-loop compute pipeline (the Vulkan tests use it too)

#include <lapse/vulkan.h>

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#endif

namespace lapse::cli {

#ifdef LAPSE_HAVE_VULKAN_PHASE
namespace {

// About 1.5 ms per dispatch on lavapipe with LP_NUM_THREADS=0 (the first
// one longer; far shorter on a real GPU): long enough to
// stand well above timestamp resolution, short enough to keep the demo
// quick. BusyKernel splits it into workgroups of 16384 loop steps, under
// lavapipe's 65535-iteration loop cap.
constexpr uint32_t kDispatchIterations = 200000;
constexpr int kDispatches = 4;

void vulkan_phase(DemoContext& c, const lapse_vulkan_commands& vk)
{
    Device& d = c.device;
    const Stream s = c.main_stream;

    lapse_vulkan_handles h{};
    h.struct_size = sizeof h;
    lapse_error error{};
    error.struct_size = sizeof error;
    if (vk.handles(d.handle(), s, &h, &error) != LAPSE_OK)
        throw std::runtime_error(std::string("cannot get the Vulkan handles of stream 0: ") + error.message);

    // Created on the plugin's VkDevice; the command buffers that use it
    // must have run before it is destroyed, hence the sync below.
    test::BusyKernel kernel(h.physical_device, h.device);
    const test::BusyKernel* k = &kernel;
    try {
        c.keep(d.profile(
            s,
            [&] {
                for (int i = 0; i < kDispatches; ++i)
                    c.keep(d.profile(s, [&] {
                        d.submit(s, [k](void* native) {
                            k->record(static_cast<VkCommandBuffer>(native), kDispatchIterations);
                        });
                    }, {.name = "gpu.dispatch"}));
            },
            {.name = "gpu.phase"}));
        d.sync(s);
    } catch (...) {
        // Never destroy the pipeline under work still queued on the GPU.
        try {
            d.sync(s);
        } catch (...) {
        }
        throw;
    }
    // With `validation = true` the layer's messages are logged by the
    // plugin; make them fail the run too, so a test can rely on the exit
    // code. (Cumulative for the device: the CPU phases before us count.)
    const std::size_t count_end =
        offsetof(lapse_vulkan_commands, validation_message_count) + sizeof(vk.validation_message_count);
    if (vk.struct_size >= count_end && vk.validation_message_count != nullptr) {
        const uint64_t messages = vk.validation_message_count(d.handle());
        if (messages != 0)
            throw std::runtime_error("the Vulkan validation layer reported " + std::to_string(messages) +
                                     " message(s); see the log above");
    }
}

}  // namespace
#endif

std::vector<DemoPhase> native_phases(Device& device)
{
    std::vector<DemoPhase> phases;
#ifdef LAPSE_HAVE_VULKAN_PHASE
    // Own mode only: attach mode has no generic submit, and its streams
    // belong to the host. handles() is the last member we call.
    const auto* vk = static_cast<const lapse_vulkan_commands*>(device.extension(LAPSE_VULKAN_COMMANDS_ID));
    constexpr std::size_t needed = offsetof(lapse_vulkan_commands, handles) + sizeof(vk->handles);
    if (vk != nullptr && vk->struct_size >= needed && vk->handles != nullptr)
        phases.push_back({"gpu (Vulkan compute)", [vk](DemoContext& c) { vulkan_phase(c, *vk); }});
#else
    (void)device;
#endif
    return phases;
}

}  // namespace lapse::cli
