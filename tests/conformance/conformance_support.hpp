// The conformance suite's view of the backend under test.
#pragma once

#include <lapse/core.hpp>

#include <cstdint>
#include <string>

namespace conformance {

// The config named by LAPSE_CONFORMANCE_CONFIG.
const std::string& config_path();
// A fresh device from that config (each test gets its own).
lapse::Device open_device();

int64_t now_ns();
// Busy-waits about `ns` on the calling thread; returns the ns it really took.
int64_t spin_for_ns(int64_t ns);

constexpr int64_t ms = 1000000;

}  // namespace conformance

// Catch2 2.x has no SKIP: say why in the output and leave the test.
#define CONFORMANCE_NOT_APPLICABLE(why)                   \
    do {                                                  \
        WARN("not applicable to this backend: " << why); \
        return;                                           \
    } while (0)
