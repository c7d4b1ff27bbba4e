// Counts every global operator new in this process (the test binary replaces
// it, and exports it, so the dlopen'ed plugin's allocations count too).
#pragma once

#include <cstdint>

namespace lapse_test {
uint64_t allocations() noexcept;
}
