// The hot path allocates nothing in the steady state.
//
// This executable replaces the global operator new (and exports it, so the
// core library and the dlopen'ed plugins call it too) and counts every call
// from any thread. After a warm-up that lets the backend's tables and
// queues reach their working size, a loop of windows must not allocate:
//   - start + end (+ abandon) through the C ABI, on the CPU plugin and on
//     forward over it;
//   - the same through the C++ host API (Device::profile_start/profile_end,
//     Window, Duration);
//   - batched resolve through the C ABI.
// The C++ API's Device::resolve is held to it too: batches larger than the
// stack holds reuse per-thread buffers once warmed up.
//
// Counts, never time: nothing here asserts speed.
//
// The counter is the replaced operator new of <lapse_test/alloc_counter.hpp>,
// exported from this executable (ENABLE_EXPORTS).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <lapse/core.hpp>
#include <lapse_test/alloc_counter.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace {

constexpr uint32_t kBatch = 256;
constexpr int kWarmBatches = 8;
constexpr int kCountedBatches = 32;

using lapse_test::allocations;

std::string cpu_config(const char* layers_above)
{
    std::string text = layers_above;
    return text + "plugin = \"cpu\"\nmode = \"stream\"\nstreams = 1\n";
}

const char* const kBare = "[backend]\n";
const char* const kForward = "[backend]\nplugin = \"forward\"\n[backend.inner]\n";

lapse::Device open(lapse::Runtime& rt, const std::string& text)
{
    return rt.open(lapse::Config::from_string(text, "<no-allocation test>", {}));
}

bool forward_available(lapse::Runtime& rt)
{
    try {
        rt.find_plugin("forward");
        open(rt, cpu_config(kForward)).close();
        return true;
    } catch (const std::exception& e) {
        WARN("forward not available, its cases are skipped: " << e.what());
        return false;
    }
}

// Start + end of one batch through the C ABI; false when a call failed.
bool c_abi_batch(const lapse::Device& dev, std::vector<lapse_token>& tokens)
{
    const lapse_plugin& p = dev.plugin();
    lapse_device* h = dev.handle();
    for (uint32_t i = 0; i < kBatch; ++i) {
        if (p.profile_start(h, 0, &tokens[i], nullptr) != LAPSE_OK) return false;
        // Every 8th window is abandoned instead of closed: abandon is on the hot path too.
        if (i % 8 == 7) {
            p.profile_abandon(h, tokens[i]);
            if (p.profile_start(h, 0, &tokens[i], nullptr) != LAPSE_OK) return false;
        }
        if (p.profile_end(h, tokens[i], nullptr, nullptr) != LAPSE_OK) return false;
    }
    return true;
}

bool c_abi_resolve(const lapse::Device& dev, const std::vector<lapse_token>& tokens, std::vector<lapse_duration>& out)
{
    for (auto& d : out) d.struct_size = sizeof d;
    const lapse_status s =
        dev.plugin().resolve(dev.handle(), tokens.data(), out.data(), kBatch, LAPSE_WAIT_FOREVER, nullptr);
    if (s != LAPSE_OK) return false;
    for (const auto& d : out)
        if (d.state != LAPSE_DURATION_READY) return false;
    return true;
}

struct Counts {
    uint64_t hot = 0;      // start + end + abandon
    uint64_t resolve = 0;  // batched resolve
    bool ok = true;
};

Counts c_abi_counts(const lapse::Device& dev)
{
    std::vector<lapse_token> tokens(kBatch);
    std::vector<lapse_duration> out(kBatch);
    Counts c;
    for (int b = 0; b < kWarmBatches && c.ok; ++b) c.ok = c_abi_batch(dev, tokens) && c_abi_resolve(dev, tokens, out);
    for (int b = 0; b < kCountedBatches && c.ok; ++b) {
        const uint64_t n0 = allocations();
        c.ok = c_abi_batch(dev, tokens);
        const uint64_t n1 = allocations();
        c.ok = c.ok && c_abi_resolve(dev, tokens, out);
        const uint64_t n2 = allocations();
        c.hot += n1 - n0;
        c.resolve += n2 - n1;
    }
    return c;
}

bool cpp_batch(lapse::Device& dev, std::vector<lapse::Duration>& durations)
{
    for (uint32_t i = 0; i < kBatch; ++i) {
        lapse::Window w = dev.profile_start(0);
        if (i % 8 == 7) {
            dev.profile_abandon(w);
            w = dev.profile_start(0);
        }
        durations[i] = dev.profile_end(w);
        if (!durations[i].pending() && !durations[i].ready()) return false;
    }
    return true;
}

Counts cpp_counts(lapse::Device& dev)
{
    std::vector<lapse::Duration> durations(kBatch);
    Counts c;
    for (int b = 0; b < kWarmBatches && c.ok; ++b) c.ok = cpp_batch(dev, durations) && dev.resolve(durations);
    for (int b = 0; b < kCountedBatches && c.ok; ++b) {
        const uint64_t n0 = allocations();
        c.ok = cpp_batch(dev, durations);
        const uint64_t n1 = allocations();
        c.ok = c.ok && dev.resolve(durations);
        const uint64_t n2 = allocations();
        c.hot += n1 - n0;
        c.resolve += n2 - n1;
        for (auto& d : durations) c.ok = c.ok && d.ready();
    }
    return c;
}

}  // namespace

TEST_CASE("the counter sees operator new", "[bench][allocation]")
{
    // A linker that kept libstdc++'s operator new would count nothing, and
    // every check below would pass for that reason alone.
    REQUIRE(lapse_test::counting_allocations());
}

TEST_CASE("steady-state windows allocate nothing: C ABI", "[bench][allocation]")
{
    REQUIRE(lapse_test::counting_allocations());
    lapse::Runtime rt;
    std::vector<std::pair<const char*, const char*>> stacks{{"cpu", kBare}};
    if (forward_available(rt)) stacks.push_back({"forward over cpu", kForward});
    for (const auto& [name, layers] : stacks) {
        SECTION(std::string(name))
        {
            lapse::Device dev = open(rt, cpu_config(layers));
            const Counts c = c_abi_counts(dev);
            INFO(name << ": " << kCountedBatches * kBatch << " windows after " << kWarmBatches * kBatch
                      << " of warm-up");
            REQUIRE(c.ok);
            CHECK(c.hot == 0);
            CHECK(c.resolve == 0);
        }
    }
}

TEST_CASE("steady-state windows allocate nothing: C++ API start/end/abandon", "[bench][allocation]")
{
    REQUIRE(lapse_test::counting_allocations());
    lapse::Runtime rt;
    std::vector<std::pair<const char*, const char*>> stacks{{"cpu", kBare}};
    if (forward_available(rt)) stacks.push_back({"forward over cpu", kForward});
    for (const auto& [name, layers] : stacks) {
        SECTION(std::string(name))
        {
            lapse::Device dev = open(rt, cpu_config(layers));
            const Counts c = cpp_counts(dev);
            INFO(name << ": " << kCountedBatches * kBatch << " windows after " << kWarmBatches * kBatch
                      << " of warm-up");
            REQUIRE(c.ok);
            CHECK(c.hot == 0);
        }
    }
}

TEST_CASE("C++ API Device::resolve of a batch allocates nothing", "[bench][allocation]")
{
    REQUIRE(lapse_test::counting_allocations());
    lapse::Runtime rt;
    lapse::Device dev = open(rt, cpu_config(kBare));
    const Counts c = cpp_counts(dev);
    REQUIRE(c.ok);
    INFO("Device::resolve made " << c.resolve << " allocation(s) over " << kCountedBatches << " batches of "
                                 << kBatch << " windows");
    CHECK(c.resolve == 0);
}
