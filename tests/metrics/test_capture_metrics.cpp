// The metrics through the capture, as a host gets them: a real CPU device
// records named windows, the capture's collector feeds the metrics, and
// /metrics is read over HTTP. And the [metrics] table of a config.
#include "scrape.hpp"

#include <lapse/core.hpp>

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

using metrics_test::parse;
using metrics_test::value;

namespace {

lapse::Config cpu_config(int streams = 2)
{
    return lapse::Config::from_string("[backend]\nplugin = \"cpu\"\nstreams = " + std::to_string(streams) + "\n",
                                      "<metrics test>", {});
}

// A port free a moment ago (for configs, which cannot say "any port" and
// report back which).
uint16_t free_port()
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t size = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size);
    ::close(fd);
    return ntohs(a.sin_port);
}

std::string config_error(const std::string& table)
{
    try {
        lapse::Runtime().open(
            lapse::Config::from_string("[backend]\nplugin = \"cpu\"\n[metrics]\n" + table, "bad.toml", "/tmp"));
    } catch (const lapse::Error& e) {
        CHECK(e.status() == LAPSE_ERROR_CONFIG);
        return e.what();
    }
    return "no error";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a capture with metrics and no file serves every named window a device records", "[metrics][capture]")
{
    lapse::CaptureOptions o;
    o.metrics.listen = "127.0.0.1:0";
    auto capture = lapse::Capture::open(o);
    REQUIRE(capture->metrics_port() != 0);
    CHECK(capture->path().empty());
    lapse::Runtime runtime;
    lapse::Device device = runtime.open(cpu_config());
    device.record_into(capture);
    for (int i = 0; i < 300; ++i) device.profile(i % 2, [] {}, {.name = i % 3 == 0 ? "tick" : "tock"});
    device.sync();
    capture->flush();  // waits until the collector wrote (and so observed) them

    const auto s = parse(metrics_test::scrape(capture->metrics_port()));
    const std::string count = "lapse_window_duration_seconds_count";
    const std::map<std::string, std::string> cpu{{"backend", "cpu"}, {"method", "device"}};
    auto of = [&](const std::string& window, const std::string& stream) {
        auto labels = cpu;
        labels["window"] = window;
        labels["stream"] = stream;
        return value(s, count, labels);
    };
    CHECK(of("tick", "0") == 50);
    CHECK(of("tick", "1") == 50);
    CHECK(of("tock", "0") == 100);
    CHECK(of("tock", "1") == 100);
    CHECK(capture->stats().recorded == 300);
    device.close();
    capture->close();
}

TEST_CASE("a metrics address that is refused fails the open before the capture file is created", "[metrics][capture]")
{
    const auto file = std::filesystem::temp_directory_path() /
                      ("lapse-metrics-test-" + std::to_string(::getpid()) + ".lapse-capture");
    std::filesystem::remove(file);
    lapse::CaptureOptions o;
    o.path = file;
    o.metrics.listen = "0.0.0.0:0";
    try {
        lapse::Capture::open(o);
        FAIL("a non-loopback address was accepted without allow_remote");
    } catch (const lapse::Error& e) {
        CHECK(e.status() == LAPSE_ERROR_CONFIG);
        CHECK(contains(e.what(), "metrics.listen: '0.0.0.0:0' is not a loopback address"));
    }
    CHECK_FALSE(std::filesystem::exists(file));
}

TEST_CASE("[metrics] alone records the devices of its config, with no file", "[metrics][config]")
{
    const uint16_t port = free_port();
    lapse::Runtime runtime;
    lapse::Device device = runtime.open(lapse::Config::from_string(
        "[backend]\nplugin = \"cpu\"\n[metrics]\nlisten = \"127.0.0.1:" + std::to_string(port) + "\"\n", "m.toml", "/tmp"));
    for (int i = 0; i < 20; ++i) device.profile(0, [] {}, {.name = "from config"});
    device.sync();
    // The collector writes at least every 100 ms; a loaded machine gets longer.
    double seen = -1;
    for (int tries = 0; tries < 100 && seen != 20; ++tries) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        seen = value(parse(metrics_test::scrape(port)), "lapse_window_duration_seconds_count", {{"window", "from config"}});
    }
    CHECK(seen == 20);
}

TEST_CASE("a [metrics] table with an unknown key or a bad value is refused naming the key and the cause", "[metrics][config]")
{
    CHECK(config_error("listen = \"127.0.0.1:0\"\ncolour = 1\n") ==
          "bad.toml:5:1: unknown key 'colour' in [metrics] (known: listen, allow_remote, max_series)");
    CHECK(contains(config_error("listen = 9464\n"), "bad.toml:4:10: metrics.listen: expected a string, got an integer"));
    CHECK(contains(config_error("listen = \"0.0.0.0:9464\"\n"),
                   "bad.toml:4:10: metrics.listen: '0.0.0.0:9464' is not a loopback address"));
    CHECK(contains(config_error("listen = \"127.0.0.1:99999\"\n"), "bad.toml:4:10: metrics.listen: '127.0.0.1:99999' has no port"));
    CHECK(contains(config_error("allow_remote = \"yes\"\n"), "metrics.allow_remote: expected a boolean"));
    CHECK(contains(config_error("max_series = 0\n"), "metrics.max_series: 0 is out of range"));
    CHECK(contains(config_error("listen = \"127.0.0.1:0\"\n[metrics.extra]\n"), "unknown key 'extra' in [metrics]"));
}
