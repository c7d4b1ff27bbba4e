// Internal: a consumer of the windows a capture records, beside its file
// (the live metrics of core/src/metrics/ are one). The collector thread
// hands every observer what it hands the chunk writer, in the same order:
// each device as it starts recording, each window once it is written
// (final: ready, failed or not measured), the per-name drop counts
// whenever they changed, and a flush with every chunk written. Observers
// never see a window the file lost.
#pragma once

#include <lapse/core/capture.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lapse::detail {

class CaptureObserver {
public:
    virtual ~CaptureObserver() = default;
    // Collector thread only, one call at a time. They must not throw (the
    // capture swallows what they do throw) and should be quick: the
    // collector's time is what keeps the closing threads' queue short.
    virtual void source(const CaptureSource& source) noexcept = 0;
    virtual void window(const CapturedWindow& window) noexcept = 0;
    // Windows dropped so far, per name, since the capture opened (totals,
    // not increments).
    virtual void drops(const std::vector<std::pair<std::string, uint64_t>>& totals) noexcept = 0;
    // The collector wrote a chunk (at least every flush interval, and on
    // every drain, flush and close): publish what was batched since.
    virtual void flush() noexcept = 0;
};

}  // namespace lapse::detail
