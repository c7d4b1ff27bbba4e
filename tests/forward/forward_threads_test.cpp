// forward from many threads at once: windows opened on one thread and
// closed on another, resolved in batches while others open, and an end
// racing an abandon on the same token. Run under TSan, this is what
// exercises forward's lock-free token table and its segment locking.
#include "stack_support.hpp"

#include <lapse/sdk/error.hpp>

#include <mutex>
#include <thread>
#include <vector>

using namespace lapse;
using namespace lapse::test;

namespace {

// `inner` may start with forward's own keys ("own_tokens = true\n") before
// the [backend.inner] table's.
std::string forward_over(const char* inner)
{
    std::string text(inner);
    std::string own;
    if (text.rfind("own_tokens", 0) == 0) {
        own = text.substr(0, text.find('\n') + 1);
        text = text.substr(own.size());
    }
    return "[backend]\nplugin = \"forward\"\n" + own + "[backend.inner]\n" + text;
}

}  // namespace

TEST_CASE("forward: windows opened on one thread close and resolve on another", "[forward][threads]")
{
    const std::string inner = GENERATE(std::string("plugin = \"cpu\"\nmode = \"stream\"\nstreams = 2\n"),
                                       std::string("own_tokens = true\nplugin = \"cpu\"\nmode = \"stream\"\nstreams = 2\n"),
                                       std::string("plugin = \"cpu\"\nmode = \"inline\"\nstreams = 2\n"),
                                       std::string("plugin = \"single_window\"\nstreams = 2\n"));
    INFO(inner);
    Runtime runtime = make_runtime();
    Device dev = runtime.open(config(forward_over(inner.c_str())));
    const lapse_plugin& p = dev.plugin();
    lapse_device* h = dev.handle();

    constexpr int kPerThread = 400;
    std::mutex m;
    std::vector<lapse_token> opened;  // handed from openers to closers
    std::vector<lapse_token> closed;
    std::atomic<int> errors{0};
    std::atomic<bool> done_opening{false};

    auto opener = [&](Stream stream) {
        for (int i = 0; i < kPerThread; ++i) {
            lapse_token t{};
            if (p.profile_start(h, stream, &t, nullptr) != LAPSE_OK) {
                errors.fetch_add(1);
                continue;
            }
            std::lock_guard<std::mutex> lock(m);
            opened.push_back(t);
        }
    };
    auto closer = [&] {
        for (;;) {
            lapse_token t{};
            {
                std::lock_guard<std::mutex> lock(m);
                if (opened.empty()) {
                    if (done_opening.load()) return;
                } else {
                    t = opened.back();
                    opened.pop_back();
                }
            }
            if (t.id == 0) {
                std::this_thread::yield();
                continue;
            }
            if (p.profile_end(h, t, nullptr, nullptr) != LAPSE_OK) {
                errors.fetch_add(1);
                continue;
            }
            std::lock_guard<std::mutex> lock(m);
            closed.push_back(t);
        }
    };
    std::thread a(opener, 0), b(opener, 1), c(closer), d(closer);
    a.join();
    b.join();
    done_opening.store(true);
    c.join();
    d.join();
    CHECK(errors.load() == 0);
    REQUIRE(closed.size() == 2 * kPerThread);

    // Resolve from two threads at once, half each.
    std::atomic<int> not_ready{0};
    auto resolver = [&](size_t from, size_t to) {
        std::vector<lapse_duration> out(to - from);
        for (auto& x : out) x.struct_size = sizeof x;
        lapse_error e = sdk::make_error();
        if (p.resolve(h, closed.data() + from, out.data(), static_cast<uint32_t>(to - from), LAPSE_WAIT_FOREVER,
                      &e) != LAPSE_OK)
            errors.fetch_add(1);
        for (auto& x : out)
            if (x.state != LAPSE_DURATION_READY || x.end_ns < x.start_ns) not_ready.fetch_add(1);
    };
    std::thread r1(resolver, 0, kPerThread), r2(resolver, kPerThread, 2 * kPerThread);
    r1.join();
    r2.join();
    CHECK(errors.load() == 0);
    CHECK(not_ready.load() == 0);
}

TEST_CASE("forward: an end racing an abandon on one token: one wins, nothing breaks", "[forward][threads]")
{
    const std::string inner = GENERATE(std::string("plugin = \"cpu\"\nmode = \"stream\"\n"),
                                       std::string("own_tokens = true\nplugin = \"cpu\"\nmode = \"stream\"\n"),
                                       std::string("plugin = \"single_window\"\n"));
    INFO(inner);
    Runtime runtime = make_runtime();
    Device dev = runtime.open(config(forward_over(inner.c_str())));
    const lapse_plugin& p = dev.plugin();
    lapse_device* h = dev.handle();
    lapse_token keep{};
    REQUIRE(p.profile_start(h, 0, &keep, nullptr) == LAPSE_OK);  // a window that spans every race
    int ended = 0;
    for (int i = 0; i < 200; ++i) {
        lapse_token t{};
        REQUIRE(p.profile_start(h, 0, &t, nullptr) == LAPSE_OK);
        lapse_status end_status = LAPSE_OK;
        std::thread e([&] { end_status = p.profile_end(h, t, nullptr, nullptr); });
        std::thread x([&] { p.profile_abandon(h, t); });
        e.join();
        x.join();
        if (end_status == LAPSE_OK) {
            ++ended;
            p.profile_abandon(h, t);  // closed, not resolved: abandon still releases it
        } else {
            CHECK(end_status == LAPSE_ERROR_INVALID_TOKEN);
        }
        CHECK(p.profile_end(h, t, nullptr, nullptr) == LAPSE_ERROR_INVALID_TOKEN);
    }
    INFO(ended << " ends won");
    REQUIRE(p.profile_end(h, keep, nullptr, nullptr) == LAPSE_OK);
    lapse_duration d{};
    d.struct_size = sizeof d;
    CHECK(p.resolve(h, &keep, &d, 1, LAPSE_WAIT_FOREVER, nullptr) == LAPSE_OK);
    CHECK(d.state == LAPSE_DURATION_READY);
}
