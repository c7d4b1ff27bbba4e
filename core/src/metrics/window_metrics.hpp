// Internal: live metrics of recorded windows, served for Prometheus to
// scrape (prometheus-cpp's pull exporter, its own HTTP threads): what a
// fleet watches where one capture file per host is not enough. A capture
// observer, fed by the capture's collector thread (docs/metrics.md).
//
// Series (labels window, stream, backend, method):
//   lapse_window_duration_seconds       histogram of ready windows; buckets
//                                       1-2-5 from 1 us to 100 s
//   lapse_windows_failed_total          counter
//   lapse_windows_not_measured_total    counter
//   lapse_windows_work_queued_total     ready windows closed with work left
//                                       queued (LAPSE_DURATION_WORK_QUEUED):
//                                       they also are in the histogram
// and, labelled by window only (the capture counts drops per name):
//   lapse_windows_dropped_total         dropped by the capture's budget
// and with no labels:
//   lapse_windows_over_series_limit_total  windows not counted above because
//                                       max_series label sets existed already
// System- and device-timed windows are separate series (`method`), never
// mixed in one histogram.
#pragma once

#include "../capture/capture_observer.hpp"

#include <lapse/core/capture.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace lapse::detail {

class WindowMetrics final : public CaptureObserver {
public:
    // Checks options.listen (see listen_address.hpp) and serves /metrics
    // there. Throws Error (LAPSE_ERROR_CONFIG) naming `where`, the address
    // and the cause when it is refused or cannot be bound.
    WindowMetrics(const MetricsOptions& options, const std::string& where);
    ~WindowMetrics() override;
    WindowMetrics(const WindowMetrics&) = delete;
    WindowMetrics& operator=(const WindowMetrics&) = delete;

    // Collector thread (CaptureObserver).
    void source(const CaptureSource& source) noexcept override;
    void window(const CapturedWindow& window) noexcept override;
    void drops(const std::vector<std::pair<std::string, uint64_t>>& totals) noexcept override;
    // Ready windows are sorted into buckets on the collector's own counts
    // and handed to prometheus-cpp here, a series at a time: one lock and a
    // few atomics per series per flush instead of per window. A scrape sees
    // the windows up to the last flush (at most the capture's flush
    // interval, 100 ms, behind).
    void flush() noexcept override;

    // The port /metrics is served on (the bound one when asked for 0).
    uint16_t port() const noexcept;

    // The histogram's bucket upper bounds, in seconds.
    static const std::vector<double>& buckets();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace lapse::detail
