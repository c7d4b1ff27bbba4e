// The C host API header compiled as C++: its declarations get C linkage and
// the frozen value types are what the C side sees.
#include <lapse/host_api.h>

#include <cstddef>
#include <cstdio>
#include <type_traits>

static_assert(std::is_standard_layout_v<lapse_host_window> && sizeof(lapse_host_window) == 64);
static_assert(std::is_standard_layout_v<lapse_host_duration> && sizeof(lapse_host_duration) == 40);
static_assert(offsetof(lapse_host_runtime_options, struct_size) == 0);
static_assert(offsetof(lapse_host_device_info, struct_size) == 0);
static_assert(offsetof(lapse_host_profile_options, struct_size) == 0);

int main()
{
    // Linked with C names: taking the address needs the library's symbol.
    auto version = &lapse_host_api_version;
    if (version() != LAPSE_HOST_API_VERSION) {
        std::fprintf(stderr, "library is host API %u, header %d\n", version(), LAPSE_HOST_API_VERSION);
        return 1;
    }
    return 0;
}
