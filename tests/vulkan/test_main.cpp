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
const bool pinned_driver = [] {
    dlopen("libvulkan_lvp.so", RTLD_NOW | RTLD_NODELETE);
    return true;
}();

}  // namespace
#endif
