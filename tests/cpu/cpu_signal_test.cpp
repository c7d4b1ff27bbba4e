// Windows opened from a signal handler that interrupts the same thread's
// own windows: with lanes, the thread's lane and record cache have one
// producer, and a handler that lands inside them must go around them
// (MarkerLane::enter) rather than push beside the call it interrupted.
#include "cpu_plugin.hpp"

#include <cerrno>
#include <pthread.h>
#include <signal.h>

using namespace lapse_test;

namespace {

// What the handler opened. Written by the handler only, read once the
// signals stopped; plain storage and lock-free atomics, as a handler may
// touch.
struct HandlerWindows {
    static constexpr uint32_t kMax = 2000;
    const lapse_plugin* plugin = nullptr;
    lapse_device* device = nullptr;
    lapse_token tokens[kMax] = {};
    std::atomic<uint32_t> opened{0};
    std::atomic<uint32_t> failed{0};
};

HandlerWindows* g_handler_windows = nullptr;  // set before the handler is installed

extern "C" void open_window_in_handler(int)
{
    const int saved_errno = errno;  // a wake-up inside may set it
    HandlerWindows& h = *g_handler_windows;
    const uint32_t i = h.opened.load(std::memory_order_relaxed);
    lapse_token t{};
    if (i >= HandlerWindows::kMax) {
    } else if (h.plugin->profile_start(h.device, 0, &t, nullptr) != LAPSE_OK ||
               h.plugin->profile_end(h.device, t, nullptr, nullptr) != LAPSE_OK) {
        h.failed.fetch_add(1, std::memory_order_relaxed);
    } else {
        h.tokens[i] = t;
        h.opened.store(i + 1, std::memory_order_release);
    }
    errno = saved_errno;
}

// Resolves `tokens` within a few seconds; false (with the first window
// that did not measure named) when one did not.
bool all_measure(const CpuDevice& dev, const lapse_token* tokens, uint32_t count, std::string& why)
{
    std::vector<lapse_duration> out(count, make_duration());
    lapse_error e = make_error();
    const lapse_status s = dev.plugin().resolve(dev.device(), tokens, out.data(), count, 5'000'000'000, &e);
    if (s != LAPSE_OK) {
        why = std::string("resolve: ") + e.message;
        return false;
    }
    for (uint32_t i = 0; i < count; ++i)
        if (out[i].state != LAPSE_DURATION_READY || out[i].end_ns < out[i].start_ns) {
            why = "window " + std::to_string(i) + " (token " + std::to_string(tokens[i].id) + ") state " +
                  std::to_string(out[i].state);
            return false;
        }
    return true;
}

}  // namespace

TEST_CASE("windows a signal handler opens while its thread opens its own all measure, and so do the thread's",
          "[stream][signal]")
{
    // Sized so that nothing grows while a handler runs (growing allocates).
    CpuDevice dev({{"streams", int64_t{1}}, {"window_capacity", int64_t{1} << 16}, {"queue_capacity", int64_t{1} << 16}});
    REQUIRE(dev.opened());
    // The thread's first window makes its lane (which allocates): before
    // any handler runs.
    dev.ready([&] {
        lapse_token t = dev.start(0);
        dev.end_ok(t);
        return t;
    }());
    HandlerWindows handler;
    handler.plugin = &dev.plugin();
    handler.device = dev.device();
    g_handler_windows = &handler;
    struct sigaction action = {};
    action.sa_handler = open_window_in_handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    struct sigaction previous = {};
    REQUIRE(sigaction(SIGUSR1, &action, &previous) == 0);

    const pthread_t self = pthread_self();
    std::atomic<bool> stop{false};
    std::thread sender([&] {
        while (!stop.load() && handler.opened.load() < HandlerWindows::kMax) {
            pthread_kill(self, SIGUSR1);
            std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
    });
    // The thread's own windows, a batch at a time, while the signals land
    // (anywhere in this loop, often inside profile_start or profile_end).
    constexpr uint32_t kBatch = 1024;
    std::vector<lapse_token> own(kBatch);
    std::string why;
    bool own_measure = true;
    uint32_t own_failed = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (handler.opened.load() < HandlerWindows::kMax && std::chrono::steady_clock::now() < deadline && own_measure &&
           own_failed == 0) {
        for (lapse_token& t : own) {
            t = lapse_token{};
            if (dev.plugin().profile_start(dev.device(), 0, &t, nullptr) != LAPSE_OK ||
                dev.plugin().profile_end(dev.device(), t, nullptr, nullptr) != LAPSE_OK)
                ++own_failed;
        }
        own_measure = own_failed == 0 && all_measure(dev, own.data(), kBatch, why);
    }
    stop = true;
    sender.join();
    REQUIRE(sigaction(SIGUSR1, &previous, nullptr) == 0);

    CHECK(own_failed == 0);
    INFO(why);
    CHECK(own_measure);
    CHECK(handler.failed.load() == 0);
    CHECK(handler.opened.load() == HandlerWindows::kMax);
    CHECK(all_measure(dev, handler.tokens, handler.opened.load(), why));
}
