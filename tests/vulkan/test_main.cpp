#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#if defined(__SANITIZE_ADDRESS__)
#include <dlfcn.h>

namespace {

// lavapipe leaks ~128 bytes per VkInstance and the loader unloads it on
// vkDestroyInstance, so LeakSanitizer reports "<unknown module>" and no
// suppression can name it. Pinning the driver (RTLD_NODELETE) keeps its
// frames symbolized, and tests/vulkan/lsan.supp then suppresses exactly
// libvulkan_lvp.so; leaks of our own code still fail the run.
//
// Every other driver and layer the loader may open is pinned as well: Mesa's
// drivers and layers have thread-local storage, and once the loader has
// probed and unloaded one the main thread's dynamic TLS vector keeps a
// stale entry for it, which LeakSanitizer's tracer reads at exit and
// crashes on ("Tracer caught signal 11"), after every assertion passed.
// Those not installed are skipped (dlopen fails quietly).
const bool pinned_driver = [] {
    for (const char* library : {"libvulkan_lvp.so", "libVkLayer_khronos_validation.so", "libvulkan_radeon.so",
                                "libvulkan_intel.so", "libvulkan_intel_hasvk.so", "libVkLayer_MESA_device_select.so"})
        dlopen(library, RTLD_NOW | RTLD_NODELETE);
    return true;
}();

}  // namespace
#endif
