// The metrics sink on its own: windows handed to it as the capture's
// collector hands them, then /metrics read over HTTP the way Prometheus
// reads it.
#include "scrape.hpp"

#include "metrics/listen_address.hpp"
#include "metrics/window_metrics.hpp"

#include <lapse/core/error.hpp>

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <thread>

using lapse::CapturedWindow;
using lapse::DurationState;
using lapse::TimingMethod;
using lapse::detail::WindowMetrics;
using metrics_test::parse;
using metrics_test::value;

namespace {

lapse::MetricsOptions loopback_any_port(uint32_t max_series = 1000)
{
    lapse::MetricsOptions o;
    o.listen = "127.0.0.1:0";
    o.max_series = max_series;
    return o;
}

lapse::CaptureSource source(uint32_t id, const std::string& plugin)
{
    lapse::CaptureSource s;
    s.id = id;
    s.plugin = plugin;
    return s;
}

CapturedWindow ready(std::string_view name, int64_t ns, TimingMethod method = TimingMethod::device,
                     lapse::Stream stream = 0, uint32_t source_id = 0)
{
    CapturedWindow w;
    w.name = name;
    w.source = source_id;
    w.stream = stream;
    w.state = DurationState::ready;
    w.method = method;
    w.start_ns = 1000;
    w.end_ns = 1000 + ns;
    return w;
}

std::string error_of(const std::function<void()>& f)
{
    try {
        f();
    } catch (const lapse::Error& e) {
        CHECK(e.status() == LAPSE_ERROR_CONFIG);
        return e.what();
    }
    return "";
}

// What a scrape sees once the collector flushed (as it does with every chunk).
std::vector<metrics_test::Sample> published(WindowMetrics& m)
{
    m.flush();
    return parse(metrics_test::scrape(m.port()));
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a listen address is HOST:PORT, numeric, and loopback unless remote is allowed", "[metrics][config]")
{
    using lapse::detail::parse_listen_address;
    CHECK(parse_listen_address("127.0.0.1:9464", false, "k").bind_spec == "127.0.0.1:9464");
    CHECK(parse_listen_address("127.0.0.2:0", false, "k").loopback);
    CHECK(parse_listen_address("localhost:9464", false, "k").bind_spec == "127.0.0.1:9464");
    CHECK(parse_listen_address("[::1]:9464", false, "k").bind_spec == "[::1]:9464");
    CHECK_FALSE(parse_listen_address("0.0.0.0:9464", true, "k").loopback);

    const std::string remote = error_of([] { parse_listen_address("0.0.0.0:9464", false, "metrics.listen"); });
    CHECK(contains(remote, "metrics.listen: '0.0.0.0:9464' is not a loopback address"));
    CHECK(contains(remote, "allow_remote = true"));
    CHECK(contains(error_of([] { parse_listen_address("[::]:9464", false, "k"); }), "not a loopback address"));
    CHECK(contains(error_of([] { parse_listen_address("127.0.0.1", false, "k"); }), "k: '127.0.0.1' is not HOST:PORT"));
    CHECK(contains(error_of([] { parse_listen_address("127.0.0.1:65536", false, "k"); }), "no port number from 0 to 65535"));
    CHECK(contains(error_of([] { parse_listen_address("127.0.0.1:http", false, "k"); }), "no port number"));
    CHECK(contains(error_of([] { parse_listen_address("metrics.example:9464", true, "k"); }), "host names are not resolved"));
    CHECK(contains(error_of([] { parse_listen_address("::1:9464", false, "k"); }), "IPv6 address without brackets"));
    CHECK(contains(error_of([] { parse_listen_address("[nope]:1", false, "k"); }), "not a numeric IPv6 address"));
}

TEST_CASE("an address that is taken is refused naming it and the kernel's reason", "[metrics][config]")
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd, 1) == 0);
    socklen_t size = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size);
    const std::string taken = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
    lapse::MetricsOptions o;
    o.listen = taken;
    const std::string why = error_of([&] { WindowMetrics m(o, "metrics"); });
    ::close(fd);
    CHECK(contains(why, "metrics.listen: cannot listen on " + taken + ": Address already in use"));
}

TEST_CASE("an IPv6 address listens, or is refused saying the HTTP server was built without IPv6", "[metrics][config]")
{
    lapse::MetricsOptions o;
    o.listen = "[::1]:0";
    std::unique_ptr<WindowMetrics> m;
    const std::string why = error_of([&] { m = std::make_unique<WindowMetrics>(o, "metrics"); });
    INFO(why);
    if (m) {
        CHECK(m->port() > 0);
    } else {
        CHECK(contains(why, "metrics.listen: cannot listen on [::1]:0: IPv6 is not available"));
        CHECK(contains(why, "127.0.0.1:9464"));
    }
}

namespace {

// Whether something accepts connections on 127.0.0.1:port.
bool accepts_connections(uint16_t port)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return connected;
}

}  // namespace

// civetweb polls its listening socket in 2 s steps and used to finish the
// step before it stopped: every capture with metrics took up to 2 s to close.
TEST_CASE("closing the metrics stops the server at once, not after the HTTP server's 2 s poll", "[metrics][close]")
{
    auto m = std::make_unique<WindowMetrics>(loopback_any_port(), "metrics");
    const uint16_t port = m->port();
    REQUIRE(port != 0);
    REQUIRE(accepts_connections(port));
    // Well inside civetweb's first 2 s poll: without the wake-up the close
    // below waits about 1.9 s.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto before = std::chrono::steady_clock::now();
    m.reset();
    const auto took = std::chrono::steady_clock::now() - before;
    // civetweb's own stop takes a 10 ms step; 1 s leaves a loaded machine
    // room and still tells the 2 s poll apart.
    CHECK(took < std::chrono::seconds(1));
    CHECK_FALSE(accepts_connections(port));
}

TEST_CASE("ready windows fill one histogram per window, stream, backend and method", "[metrics][sink]")
{
    WindowMetrics m(loopback_any_port(), "metrics");
    REQUIRE(m.port() != 0);
    m.source(source(0, "cpu"));
    m.source(source(1, "vulkan"));
    for (int i = 0; i < 10; ++i) m.window(ready("frame", 1'500'000));                      // 1.5 ms, device
    for (int i = 0; i < 4; ++i) m.window(ready("frame", 3'000'000, TimingMethod::system));  // never mixed in
    m.window(ready("frame", 40'000, TimingMethod::device, 1));                             // another stream
    m.window(ready("frame", 7'000, TimingMethod::device, 0, 1));                           // another backend

    const auto s = published(m);
    const std::string count = "lapse_window_duration_seconds_count";
    CHECK(value(s, count, {{"window", "frame"}, {"stream", "0"}, {"backend", "cpu"}, {"method", "device"}}) == 10);
    CHECK(value(s, count, {{"window", "frame"}, {"stream", "0"}, {"backend", "cpu"}, {"method", "system"}}) == 4);
    CHECK(value(s, count, {{"window", "frame"}, {"stream", "1"}, {"backend", "cpu"}}) == 1);
    CHECK(value(s, count, {{"window", "frame"}, {"backend", "vulkan"}}) == 1);
    CHECK(value(s, "lapse_window_duration_seconds_sum", {{"method", "device"}, {"stream", "0"}, {"backend", "cpu"}}) ==
          Approx(0.015));
    // Cumulative buckets: 1.5 ms is above le=0.001, inside le=0.002.
    const std::map<std::string, std::string> device0{{"stream", "0"}, {"backend", "cpu"}, {"method", "device"}};
    auto bucket = [&](const std::string& le) {
        auto labels = device0;
        labels["le"] = le;
        return value(s, "lapse_window_duration_seconds_bucket", labels);
    };
    CHECK(bucket("0.001") == 0);
    CHECK(bucket("0.002") == 10);
    CHECK(bucket("+Inf") == 10);
}

TEST_CASE("windows are published at the collector's flush, not one by one", "[metrics][sink]")
{
    WindowMetrics m(loopback_any_port(), "metrics");
    m.window(ready("batched", 2'000));
    m.window(ready("batched", 3'000));
    const std::string count = "lapse_window_duration_seconds_count";
    CHECK(value(parse(metrics_test::scrape(m.port())), count, {{"window", "batched"}}) == 0);
    const auto s = published(m);
    CHECK(value(s, count, {{"window", "batched"}}) == 2);
    CHECK(value(s, "lapse_window_duration_seconds_sum", {{"window", "batched"}}) == Approx(5e-6));
    CHECK(value(s, "lapse_window_duration_seconds_bucket", {{"window", "batched"}, {"le", "2e-06"}}) == 1);
    m.flush();  // nothing new: nothing added twice
    CHECK(value(published(m), count, {{"window", "batched"}}) == 2);
}

TEST_CASE("the buckets run 1-2-5 from a microsecond to 100 seconds", "[metrics][sink]")
{
    const auto& b = WindowMetrics::buckets();
    REQUIRE(b.size() == 25);  // 8 decades of 1, 2, 5, then 100
    CHECK(b.front() == Approx(1e-6));
    CHECK(b[1] == Approx(2e-6));
    CHECK(b[2] == Approx(5e-6));
    CHECK(b.back() == Approx(100.0));
    for (std::size_t i = 1; i < b.size(); ++i) CHECK(b[i] > b[i - 1]);
}

TEST_CASE("failed, not-measured and work-left-queued windows are counted apart from the histogram", "[metrics][sink]")
{
    WindowMetrics m(loopback_any_port(), "metrics");
    m.source(source(0, "fusion"));
    CapturedWindow failed = ready("step", 0);
    failed.state = DurationState::failed;
    failed.method = TimingMethod::none;
    CapturedWindow unmeasured = failed;
    unmeasured.state = DurationState::not_measured;
    CapturedWindow queued = ready("step", 2'000'000);
    queued.flags = LAPSE_DURATION_WORK_QUEUED;
    m.window(failed);
    m.window(failed);
    m.window(unmeasured);
    m.window(queued);
    m.window(ready("step", 2'000'000));

    const auto s = published(m);
    CHECK(value(s, "lapse_windows_failed_total", {{"window", "step"}, {"method", "none"}}) == 2);
    CHECK(value(s, "lapse_windows_not_measured_total", {{"window", "step"}, {"method", "none"}}) == 1);
    CHECK(value(s, "lapse_windows_work_queued_total", {{"window", "step"}, {"method", "device"}}) == 1);
    // The partial one is still a measured duration; the failed ones are no number at all.
    CHECK(value(s, "lapse_window_duration_seconds_count", {{"window", "step"}, {"method", "device"}}) == 2);
    CHECK(value(s, "lapse_window_duration_seconds_count", {{"window", "step"}, {"method", "none"}}) == -1);
}

TEST_CASE("dropped windows are counted per name from the capture's running totals", "[metrics][sink]")
{
    WindowMetrics m(loopback_any_port(), "metrics");
    m.drops({{"a", 3}});
    m.drops({{"a", 5}, {"b", 1}});
    m.drops({{"a", 5}, {"b", 1}});  // unchanged totals add nothing
    const auto s = published(m);
    CHECK(value(s, "lapse_windows_dropped_total", {{"window", "a"}}) == 5);
    CHECK(value(s, "lapse_windows_dropped_total", {{"window", "b"}}) == 1);
}

TEST_CASE("past max_series label sets, windows are counted apart, not as new series", "[metrics][sink]")
{
    WindowMetrics m(loopback_any_port(2), "metrics");
    m.window(ready("one", 1000));
    m.window(ready("two", 1000));
    m.window(ready("three", 1000));
    m.window(ready("three", 1000));
    m.window(ready("one", 1000));  // an existing series still counts
    m.drops({{"x", 1}, {"y", 1}, {"z", 4}});
    const auto s = published(m);
    CHECK(metrics_test::count(s, "lapse_window_duration_seconds_count") == 2);
    CHECK(value(s, "lapse_window_duration_seconds_count", {{"window", "one"}}) == 2);
    CHECK(value(s, "lapse_window_duration_seconds_count", {{"window", "three"}}) == -1);
    CHECK(value(s, "lapse_windows_over_series_limit_total", {}) == 2 + 4);
}

TEST_CASE("a window name that is not UTF-8 still makes a scrape Prometheus accepts", "[metrics][sink]")
{
    WindowMetrics m(loopback_any_port(), "metrics");
    const std::string name = std::string("bad\xff\xfe") + "name\"quoted\"\xc3\xa9";
    m.window(ready(name, 1000));
    const auto s = published(m);
    CHECK(value(s, "lapse_window_duration_seconds_count", {{"window", "bad??name\"quoted\"\xc3\xa9"}}) == 1);
}
