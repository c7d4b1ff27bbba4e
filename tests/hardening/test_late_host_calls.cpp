// host.h: a config node lives only during the `open` call that received
// it. A plugin that keeps one and calls the host's services with it later
// gets LAPSE_ERROR_INVALID_ARGUMENT and a message, never a read of freed
// memory (this test is part of the ASan run: scripts/ci-sanitizers.sh).
#include "support.hpp"

#include <catch2/catch.hpp>

#include <string>

namespace {

// The fixture's extension (fixtures/late_host.c).
struct late_host_calls {
    uint32_t struct_size;
    uint32_t reserved;
    void (*call)(lapse_status* statuses, lapse_error* errors);
};

}  // namespace

TEST_CASE("config services and open_backend called with a node kept past open answer an error", "[host][late]")
{
    lapse::Runtime runtime;
    const std::string toml = "[backend]\nplugin = \"" + hardening::fixture("lapse_late_host.so").string() + "\"\n";
    lapse::Device device = runtime.open(lapse::Config::from_string(toml, "<late host>", {}));
    auto* calls = static_cast<const late_host_calls*>(device.plugin().get_extension(device.handle(), "hardening.late_host/1"));
    REQUIRE(calls != nullptr);

    lapse_status statuses[3] = {LAPSE_OK, LAPSE_OK, LAPSE_OK};
    lapse_error errors[3];
    for (auto& e : errors) {
        e = lapse_error{};
        e.struct_size = sizeof(lapse_error);
    }
    calls->call(statuses, errors);
    const char* names[3] = {"config_int", "config_child", "open_backend"};
    for (int i = 0; i < 3; ++i) {
        INFO(names[i]);
        CHECK(statuses[i] == LAPSE_ERROR_INVALID_ARGUMENT);
        CHECK(std::string(errors[i].message) ==
              std::string(names[i]) +
                  ": the config node is no longer valid (a node lives only during the open call that received it)");
    }
    hardening::require_host_still_works(runtime);
}
