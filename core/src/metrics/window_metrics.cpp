#include "window_metrics.hpp"

#include "listen_address.hpp"

#include <lapse/core/error.hpp>

#include <civetweb.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <deque>
#include <string_view>
#include <unordered_map>

namespace lapse::detail {

namespace {

// 1, 2, 5 times 10^from ... 10^to, each the double nearest its decimal
// value (what its `le` label says), so a window of exactly 2000 ns is in
// le="2e-06".
std::vector<double> one_two_five(int from, int to)
{
    std::vector<double> bounds;
    for (int exponent = from; exponent <= to; ++exponent)
        for (int step : {1, 2, 5})
            if (exponent < to || step == 1)
                bounds.push_back(std::strtod((std::to_string(step) + "e" + std::to_string(exponent)).c_str(), nullptr));
    return bounds;
}

// Prometheus refuses a whole scrape over one label value that is not
// UTF-8; a window name is whatever bytes the program chose.
std::string utf8_label(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
        bool ok = n > 0 && i + n <= text.size() && !(n == 2 && c < 0xc2);
        for (std::size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
        if (ok) {
            out.append(text.substr(i, n));
            i += n;
        } else {
            out += '?';
            ++i;
        }
    }
    return out;
}

struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

// Binds and closes a socket on the address first: the kernel's reason
// (address in use, not this host's) is clearer than civetweb's.
std::string bind_problem(const ListenAddress& address)
{
    SocketAddress where = socket_address(address, address.port);
    const int fd = ::socket(where.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return std::string("socket: ") + std::strerror(errno);
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // as civetweb binds
    std::string problem;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&where.storage), where.size) != 0) problem = std::strerror(errno);
    ::close(fd);
    return problem;
}

}  // namespace

const std::vector<double>& WindowMetrics::buckets()
{
    static const std::vector<double> bounds = one_two_five(-6, 2);
    return bounds;
}

struct WindowMetrics::Impl {
    uint32_t max_series = 0;
    std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
    prometheus::Family<prometheus::Histogram>& durations =
        prometheus::BuildHistogram()
            .Name("lapse_window_duration_seconds")
            .Help("Durations of the recorded lapse windows that were measured (ready), by timing method")
            .Register(*registry);
    prometheus::Family<prometheus::Counter>& failed =
        prometheus::BuildCounter()
            .Name("lapse_windows_failed_total")
            .Help("Recorded windows that failed: the work ran, its measurement was lost")
            .Register(*registry);
    prometheus::Family<prometheus::Counter>& not_measured =
        prometheus::BuildCounter()
            .Name("lapse_windows_not_measured_total")
            .Help("Recorded windows that were not measured (no number; never a zero)")
            .Register(*registry);
    prometheus::Family<prometheus::Counter>& work_queued =
        prometheus::BuildCounter()
            .Name("lapse_windows_work_queued_total")
            .Help("Measured windows closed without flush while their work was still queued (partial durations)")
            .Register(*registry);
    prometheus::Family<prometheus::Counter>& dropped =
        prometheus::BuildCounter()
            .Name("lapse_windows_dropped_total")
            .Help("Windows the capture dropped past its memory budget (or could not write)")
            .Register(*registry);
    prometheus::Counter& over_limit =
        prometheus::BuildCounter()
            .Name("lapse_windows_over_series_limit_total")
            .Help("Windows left out of the labelled series: max_series label sets existed already")
            .Register(*registry)
            .Add({});
    std::unique_ptr<prometheus::Exposer> exposer;
    // civetweb's listening sockets (see ~WindowMetrics).
    SocketAddress bound;
    std::vector<int> listeners;

    // Family::Add hashes every label on each call: each label set is made
    // once, then found by name and a linear scan of its few keys.
    struct Series {
        uint32_t source = 0;
        Stream stream = 0;
        TimingMethod method = TimingMethod::none;
        prometheus::Histogram* duration = nullptr;
        prometheus::Counter* failed = nullptr;
        prometheus::Counter* not_measured = nullptr;
        prometheus::Counter* work_queued = nullptr;
        // Since the last flush.
        std::vector<double> bucket_counts;  // buckets().size() + 1 (+Inf), when `duration`
        double sum_seconds = 0;
        uint64_t failed_n = 0, not_measured_n = 0, work_queued_n = 0;
        bool dirty = false;
    };
    std::deque<Series> all;  // stable addresses: by_name and dirty point into it
    std::unordered_map<std::string, std::vector<Series*>, StringHash, std::equal_to<>> by_name;
    std::vector<Series*> dirty;
    std::size_t series_count = 0;
    std::vector<std::string> backends;  // by CaptureSource::id
    struct Drop {
        uint64_t seen = 0;
        prometheus::Counter* counter = nullptr;
    };
    std::unordered_map<std::string, Drop, StringHash, std::equal_to<>> drops;
    std::size_t drop_series = 0;

    Series* of(const CapturedWindow& w)
    {
        auto it = by_name.find(w.name);
        if (it != by_name.end())
            for (Series* s : it->second)
                if (s->source == w.source && s->stream == w.stream && s->method == w.method) return s;
        if (series_count >= max_series) return nullptr;
        const std::string backend = w.source < backends.size() ? backends[w.source] : "unknown";
        const prometheus::Labels labels{{"window", utf8_label(w.name)},
                                        {"stream", std::to_string(w.stream)},
                                        {"backend", backend},
                                        {"method", to_string(w.method)}};
        dirty.reserve(series_count + 1);  // flush never allocates; window() marks without allocating
        Series& s = all.emplace_back();
        s.source = w.source;
        s.stream = w.stream;
        s.method = w.method;
        // Counters start at zero, so a rate() sees their first increase; a
        // window with no timing method (failed, not measured) never makes
        // the 28 series of an empty histogram.
        s.failed = &failed.Add(labels);
        s.not_measured = &not_measured.Add(labels);
        if (w.method != TimingMethod::none) {
            s.duration = &durations.Add(labels, WindowMetrics::buckets());
            s.work_queued = &work_queued.Add(labels);
            s.bucket_counts.assign(WindowMetrics::buckets().size() + 1, 0.0);
        }
        if (it == by_name.end()) it = by_name.emplace(std::string(w.name), std::vector<Series*>{}).first;
        it->second.push_back(&s);
        ++series_count;
        return &s;
    }
};

WindowMetrics::WindowMetrics(const MetricsOptions& options, const std::string& where)
    : impl_(std::make_unique<Impl>())
{
    const ListenAddress address = parse_listen_address(options.listen, options.allow_remote, where + ".listen");
    impl_->max_series = options.max_series;
    // civetweb answers an IPv6 address it was built without with "null
    // context when constructing CivetServer"; say what is missing instead.
    constexpr unsigned kCivetwebIpv6 = 8;
    if (address.host.find(':') != std::string::npos && ::mg_check_feature(kCivetwebIpv6) == 0)
        throw Error(LAPSE_ERROR_CONFIG, where + ".listen: cannot listen on " + address.bind_spec +
                                            ": IPv6 is not available: the HTTP server library serving the metrics "
                                            "(civetweb " + std::string(::mg_version()) +
                                            ") was built without it; listen on an IPv4 address such as 127.0.0.1:9464");
    const std::string problem = bind_problem(address);
    if (!problem.empty())
        throw Error(LAPSE_ERROR_CONFIG, where + ".listen: cannot listen on " + address.bind_spec + ": " + problem);
    try {
        impl_->exposer = std::make_unique<prometheus::Exposer>(address.bind_spec, 2);
    } catch (const std::exception& e) {
        throw Error(LAPSE_ERROR_CONFIG, where + ".listen: cannot listen on " + address.bind_spec + ": " + e.what());
    }
    impl_->exposer->RegisterCollectable(impl_->registry);
    impl_->bound = socket_address(address, port());
    impl_->listeners = listening_sockets(impl_->bound);
}

WindowMetrics::~WindowMetrics()
{
    // civetweb (1.15) waits for connections in poll() calls of 2 s
    // (SOCKET_TIMEOUT_QUANTUM, fixed at its build; no option shortens it)
    // and reads its stop flag only between them, so stopping the Exposer
    // waited out the rest of one: up to 2 s on every close. Shut down, the
    // listening socket wakes that poll at once; its accept fails, the loop
    // sees the flag, and the server stops in its own 10 ms step.
    stop_listening(impl_->listeners, impl_->bound);
    impl_->exposer.reset();
}

void WindowMetrics::source(const CaptureSource& source) noexcept
{
    try {
        if (impl_->backends.size() <= source.id) impl_->backends.resize(source.id + 1, "unknown");
        impl_->backends[source.id] = source.plugin;
    } catch (...) {
        // Out of memory: its windows are labelled backend="unknown".
    }
}

void WindowMetrics::window(const CapturedWindow& w) noexcept
{
    Impl::Series* s = nullptr;
    try {
        s = impl_->of(w);
    } catch (...) {
        s = nullptr;  // out of memory for a new label set
    }
    if (s == nullptr) {
        impl_->over_limit.Increment();
        return;
    }
    switch (w.state) {
    case DurationState::ready: {
        if (s->duration == nullptr) return;  // the core refuses a ready duration without a method
        const double seconds = static_cast<double>(w.ns()) / 1e9;
        // Prometheus's `le`: the first bound at or above the value.
        const auto& bounds = WindowMetrics::buckets();
        const auto bucket = std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin();
        s->bucket_counts[static_cast<std::size_t>(bucket)] += 1;
        s->sum_seconds += seconds;
        if ((w.flags & LAPSE_DURATION_WORK_QUEUED) != 0) ++s->work_queued_n;
        break;
    }
    case DurationState::failed: ++s->failed_n; break;
    case DurationState::not_measured: ++s->not_measured_n; break;
    case DurationState::pending: return;  // a capture records final windows only
    }
    if (!s->dirty) {
        s->dirty = true;
        impl_->dirty.push_back(s);  // reserved when the series was made
    }
}

void WindowMetrics::flush() noexcept
{
    for (Impl::Series* s : impl_->dirty) {
        try {
            if (s->duration != nullptr) {
                bool any = false;
                for (double n : s->bucket_counts) any = any || n > 0;
                if (any) s->duration->ObserveMultiple(s->bucket_counts, s->sum_seconds);
                std::fill(s->bucket_counts.begin(), s->bucket_counts.end(), 0.0);
                s->sum_seconds = 0;
            }
        } catch (...) {
            // A size mismatch cannot happen (the vector is made to the bounds).
        }
        if (s->failed_n) s->failed->Increment(static_cast<double>(s->failed_n));
        if (s->not_measured_n) s->not_measured->Increment(static_cast<double>(s->not_measured_n));
        if (s->work_queued_n && s->work_queued) s->work_queued->Increment(static_cast<double>(s->work_queued_n));
        s->failed_n = s->not_measured_n = s->work_queued_n = 0;
        s->dirty = false;
    }
    impl_->dirty.clear();
}

void WindowMetrics::drops(const std::vector<std::pair<std::string, uint64_t>>& totals) noexcept
{
    for (const auto& [name, total] : totals) {
        try {
            auto it = impl_->drops.find(std::string_view(name));
            if (it == impl_->drops.end()) {
                // Past the limit a name is still tracked (the capture holds
                // every dropped name already), its drops counted apart.
                prometheus::Counter* counter = nullptr;
                if (impl_->drop_series < impl_->max_series) {
                    counter = &impl_->dropped.Add({{"window", utf8_label(name)}});
                    ++impl_->drop_series;
                }
                it = impl_->drops.emplace(name, Impl::Drop{0, counter}).first;
            }
            Impl::Drop& d = it->second;
            if (total > d.seen) {
                (d.counter != nullptr ? *d.counter : impl_->over_limit).Increment(static_cast<double>(total - d.seen));
                d.seen = total;
            }
        } catch (...) {
            // Out of memory: the next totals catch this name up.
        }
    }
}

uint16_t WindowMetrics::port() const noexcept
{
    try {
        const std::vector<int> ports = impl_->exposer->GetListeningPorts();
        return ports.empty() ? 0 : static_cast<uint16_t>(ports.front());
    } catch (...) {
        return 0;
    }
}

}  // namespace lapse::detail
