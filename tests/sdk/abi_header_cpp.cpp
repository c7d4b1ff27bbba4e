// The same header compiled as C++ (with the SDK's C++ helper on top).
#include <lapse/lapse.h>
#include <lapse/sdk/plugin.hpp>

#include <cstdio>
#include <type_traits>

static_assert(std::is_standard_layout_v<lapse_plugin>);
static_assert(std::is_trivially_copyable_v<lapse_token>);
static_assert(sizeof(lapse_token) == 16);

int main()
{
    lapse_error error = lapse::sdk::make_error();
    lapse::sdk::failf(&error, LAPSE_ERROR_CONFIG, "key '%s'", "streams");
    std::printf("%s: %s\n", lapse_status_name(error.code), error.message);
    return error.code == LAPSE_ERROR_CONFIG ? 0 : 1;
}
