// What forward's device files share (forward_device.cpp, segments.cpp).
#pragma once

#include <lapse/lapse.h>
#include <lapse/sdk/deadline.hpp>
#include <lapse/sdk/duration.hpp>
#include <lapse/sdk/error.hpp>
#include <lapse/sdk/host.hpp>

#include <cstdint>

namespace lapse::forward::device_support {

constexpr uint32_t kBatch = 64;  // tokens handed to the inner resolve at once

using sdk::copy_duration;  // flags and queued_ops travel up with the times
using sdk::Deadline;       // one per resolve; its timeout_ns() is what each inner resolve gets
using sdk::set_failed;

}  // namespace lapse::forward::device_support
