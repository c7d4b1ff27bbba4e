// Lifetime checks: what only shows when a device stays open. A plugin's
// own threads (a worker, a completion poller) may fail well after `open`
// returned; every other check opens, measures and closes within
// milliseconds and would never see it.
#include "checks.hpp"

#include <lapse/core.hpp>
#include <lapse/lapse.h>

#include <chrono>
#include <string>
#include <thread>

namespace lapse::cli {
namespace {

// How long the device is held: a worker failing "a second after open" must
// fail inside the check.
constexpr auto held_for = std::chrono::milliseconds(2500);

void check_stays_up(const CheckContext& ctx, std::string& note)
{
    Runtime runtime;
    Device device;
    try {
        device = runtime.open(Config::from_string(ctx.config_text, ctx.config_name, ctx.config_dir));
    } catch (const Error& e) {
        if (e.status() == LAPSE_ERROR_UNAVAILABLE) skip(std::string("device unavailable: ") + e.what());
        fail(std::string("open failed (") + e.status_name() + "): " + e.what());
    }
    const lapse_plugin& p = device.plugin();
    lapse_device* h = device.handle();
    const auto until = std::chrono::steady_clock::now() + held_for;
    int rounds = 0;
    // Used now and then, idle in between, as a device in a host is.
    while (std::chrono::steady_clock::now() < until) {
        lapse_error err{};
        err.struct_size = sizeof err;
        const lapse_status s = p.sync(h, LAPSE_ALL_STREAMS, &err);
        require(s == LAPSE_OK, std::string("sync after ") + std::to_string(rounds) + " rounds = " +
                                   lapse_status_name(s) + ": " + err.message);
        ++rounds;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    device.close();
    note = "open for " + std::to_string(held_for.count()) + " ms, synced " + std::to_string(rounds) + " times";
}

}  // namespace

void append_lifetime_checks(std::vector<Check>& out)
{
    out.push_back({"device.stays_up",
                   "a device held open for 2.5 s and synced now and then does not crash (a worker thread that "
                   "fails after open)",
                   &check_stays_up});
}

}  // namespace lapse::cli
