// What every fusion test opens: fusion with a batch size over a CPU
// backend in stream mode.
#pragma once

#include "stack_support.hpp"

#include <string>
#include <string_view>

namespace lapse::test {

inline constexpr std::string_view kOneCpuStream = "plugin = \"cpu\"\nmode = \"stream\"\nstreams = 1";
inline constexpr std::string_view kTwoCpuStreams = "plugin = \"cpu\"\nmode = \"stream\"\nstreams = 2";

// `inner` is the body of [backend.inner].
inline Device open_fusion(Runtime& runtime, int max_batch, std::string_view inner = kOneCpuStream)
{
    return runtime.open(config("[backend]\nplugin = \"fusion\"\nmax_batch = " + std::to_string(max_batch) +
                               "\n[backend.inner]\n" + std::string(inner) + "\n"));
}

}  // namespace lapse::test
