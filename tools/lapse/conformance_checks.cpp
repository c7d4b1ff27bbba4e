// Device checks: a device opened through the host (Runtime::open with the
// check's config), then driven through the raw C ABI (Device::plugin() and
// handle()) so that every status and state the plugin answers is seen as it
// is, misuse included. A device the host reports unavailable (no driver, no
// GPU) makes each of these checks skip with the host's reason.
#include "checks.hpp"
#include "device_under_test.hpp"

namespace lapse::cli {
namespace {

using namespace device_checks;

void check_open_close(const CheckContext& ctx, std::string& note)
{
    std::string name;
    {
        Dut dut(ctx);
        require(std::memchr(dut.info.name, '\0', sizeof dut.info.name) != nullptr, "device name is not terminated");
        name = dut.info.name;
        require(!name.empty(), "describe gave an empty device name");
        const uint64_t declared = dut.p->capabilities;
        require((dut.info.capabilities & ~declared) == 0,
                "the device offers capabilities the descriptor does not declare (" +
                    capability_names(dut.info.capabilities & ~declared) + "): the descriptor's are the best it offers");
        require(!(dut.has(LAPSE_CAP_SINGLE_WINDOW) &&
                  (dut.info.capabilities & (LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING)) != 0),
                "the device says single-window together with nested or overlapping");
        // A short lapse_device_info is refused, not written past.
        lapse_device_info small{};
        small.struct_size = offsetof(lapse_device_info, capabilities);
        lapse_error err = Dut::error();
        lapse_status s = dut.p->describe(dut.h, &small, &err);
        require(s == LAPSE_ERROR_INVALID_ARGUMENT,
                "describe with a short lapse_device_info answered " + status_text(s) + ", expected INVALID_ARGUMENT");
        // A second device from the same file, open at the same time.
        Dut second(ctx);
        second.sync();
        dut.sync();
    }
    // And again after both closed: no state left behind in the file.
    Dut again(ctx);
    again.sync();
    note = "\"" + name + "\", " + std::to_string(again.info.stream_count) + " stream(s), " +
           capability_names(again.info.capabilities);
}

void check_submit_sync(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    std::vector<HostWork> work(dut.info.stream_count);
    for (lapse_stream s = 0; s < dut.info.stream_count; ++s) {
        submit(dut, s, work[s]);
        dut.sync(s);
        require(work[s].runs.load() == 1, "work submitted to stream " + std::to_string(s) + " ran " +
                                              std::to_string(work[s].runs.load()) + " time(s) by the time sync returned");
    }
    for (lapse_stream s = 0; s < dut.info.stream_count; ++s) submit(dut, s, work[s]);
    dut.sync(LAPSE_ALL_STREAMS);
    for (lapse_stream s = 0; s < dut.info.stream_count; ++s)
        require(work[s].runs.load() == 2, "sync(all streams) returned before stream " + std::to_string(s) + "'s work ran");
    HostWork never;
    lapse_error err = Dut::error();
    lapse_status s = dut.p->submit(dut.h, dut.info.stream_count, &HostWork::run, &never, &err);
    require(s < 0, "submit to stream " + std::to_string(dut.info.stream_count) + " (out of range) answered " +
                       status_text(s));
    err = Dut::error();
    s = dut.p->sync(dut.h, dut.info.stream_count, &err);
    require(s < 0, "sync of an out-of-range stream answered " + status_text(s));
    dut.sync();
    require(never.runs.load() == 0, "work refused by submit ran anyway");
    note = "work ran exactly once per submit on " + std::to_string(dut.info.stream_count) + " stream(s)";
}

void check_bad_stream(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    lapse_token t{};
    lapse_error err = Dut::error();
    lapse_status s = dut.p->profile_start(dut.h, dut.info.stream_count, &t, &err);
    expect_status(s, err, LAPSE_ERROR_INVALID_ARGUMENT, "profile_start(stream " + std::to_string(dut.info.stream_count) + ")");
    note = "out-of-range stream refused: " + std::string(err.message);
}

void check_extension_unknown(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    if (dut.p->get_extension == nullptr) {
        note = "get_extension is null (no extensions)";
        return;
    }
    require(dut.p->get_extension(dut.h, "lapse.validate.no-such-extension/1") == nullptr,
            "get_extension returned non-null for an unknown id");
    note = "unknown extension id answered NULL";
}

// lapse.window_dispatch/1 (lapse/dispatch.h): a layer that offers it says
// its windows open on another device and that tokens are shared. The host
// believes it on every window, so it must hold: a token opened on the
// target closes and resolves through the layer, and the other way round.
void check_window_dispatch(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    if (dut.p->get_extension == nullptr) {
        note = "get_extension is null: windows are the device's own";
        return;
    }
    const auto* d =
        static_cast<const lapse_window_dispatch*>(dut.p->get_extension(dut.h, LAPSE_WINDOW_DISPATCH_EXTENSION));
    if (d == nullptr) {
        note = "not offered: windows are the device's own";
        return;
    }
    require(d->struct_size >= sizeof(lapse_window_dispatch),
            "lapse_window_dispatch.struct_size is " + std::to_string(d->struct_size) + ", less than " +
                std::to_string(sizeof(lapse_window_dispatch)));
    require(d->plugin != nullptr && d->device != nullptr, "lapse_window_dispatch names a null plugin or device");
    const lapse_plugin& tp = *d->plugin;
    require(tp.profile_start != nullptr && tp.profile_end != nullptr && tp.profile_abandon != nullptr,
            "the dispatch target lacks profile_start, profile_end or profile_abandon");
    const auto* again =
        static_cast<const lapse_window_dispatch*>(dut.p->get_extension(dut.h, LAPSE_WINDOW_DISPATCH_EXTENSION));
    require(again != nullptr && again->plugin == d->plugin && again->device == d->device,
            "a second query names another target (it must hold for the device's whole life)");
    for (lapse_stream s = 0; s < dut.info.stream_count; ++s) {
        const std::string where = "stream " + std::to_string(s) + ": ";
        lapse_error err = Dut::error();
        lapse_token on_target{};
        lapse_status st = tp.profile_start(d->device, s, &on_target, &err);
        require(st == LAPSE_OK, where + "profile_start on the dispatch target = " + status_text(st) + ": " +
                                    err.message + " (the device offers dispatch, so every stream must open windows)");
        require(on_target.opened_on == s, where + "the target's token says stream " +
                                              std::to_string(on_target.opened_on));
        err = Dut::error();
        st = dut.p->profile_end(dut.h, on_target, nullptr, &err);
        require(st == LAPSE_OK, where + "a token from the dispatch target does not close through the device: " +
                                    status_text(st) + ": " + err.message);
        lapse_duration a = dut.resolve(on_target);
        require(a.state != LAPSE_DURATION_FAILED,
                where + "a window opened on the target and closed through the device FAILED (" +
                    status_text(a.failure) + ")");

        lapse_token on_device = dut.open(s);
        err = Dut::error();
        st = tp.profile_end(d->device, on_device, nullptr, &err);
        require(st == LAPSE_OK, where + "profile_end on the target of a token from the device = " + status_text(st) +
                                    ": " + err.message);
        lapse_duration b = dut.resolve(on_device);
        require(b.state != LAPSE_DURATION_FAILED,
                where + "a window opened through the device and closed on the target FAILED (" +
                    status_text(b.failure) + ")");

        lapse_token abandoned = dut.open(s);
        tp.profile_abandon(d->device, abandoned);
        err = Dut::error();
        st = dut.p->profile_end(dut.h, abandoned, nullptr, &err);
        require(st == LAPSE_ERROR_INVALID_TOKEN, where + "a window abandoned on the target still closed through the "
                                                         "device (" + status_text(st) + ")");
    }
    note = std::string("offered: windows open on '") + (tp.name != nullptr ? tp.name : "?") +
           "'; tokens cross both ways on every stream";
}

void check_close_with_windows_open(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    HostWork pending_work;
    pending_work.spin_ns = 1'000'000;
    // One window left open and one closed but never resolved, per stream
    // (where the backend opens windows), and work still queued.
    bool any = false;
    for (lapse_stream s = 0; s < dut.info.stream_count; ++s) {
        lapse_token t{};
        lapse_error err = Dut::error();
        lapse_status st = dut.p->profile_start(dut.h, s, &t, &err);
        if (st == LAPSE_NO_WINDOW) continue;
        require(st == LAPSE_OK, "profile_start = " + status_text(st) + ": " + err.message);
        any = true;
        dut.end(t);
        // A closed window is no longer open: even a single-window stream
        // takes the next one.
        lapse_token open{};
        err = Dut::error();
        st = dut.p->profile_start(dut.h, s, &open, &err);
        require(st == LAPSE_OK, "profile_start after a close = " + status_text(st) + ": " + err.message);
    }
    submit(dut, 0, pending_work);
    dut.device.close();  // must abandon them, run the queued work, and return
    require(pending_work.runs.load() == 1,
            "work accepted by submit ran " + std::to_string(pending_work.runs.load()) +
                " time(s) when the device closed first (the ABI says exactly once)");
    note = any ? "closed with open and unresolved windows; queued work ran once" : "closed with queued work; it ran once";
}

}  // namespace

void append_device_checks(std::vector<Check>& out)
{
    out.push_back({"device.open_close", "open, describe, a second device at once, close, reopen", &check_open_close});
    out.push_back({"device.submit_sync", "work runs exactly once per submit; sync waits for it; bad streams refused",
                   &check_submit_sync});
    out.push_back({"device.bad_stream", "profile_start on an out-of-range stream is INVALID_ARGUMENT", &check_bad_stream});
    out.push_back({"device.extension_unknown", "an unknown extension id answers NULL", &check_extension_unknown});
    out.push_back({"device.window_dispatch",
                   "lapse.window_dispatch/1, when offered, is sound: tokens cross between device and target",
                   &check_window_dispatch});
    append_window_checks(out);
    out.push_back({"device.close_with_windows_open", "close abandons open and unresolved windows and runs queued work",
                   &check_close_with_windows_open});
    append_compact_checks(out);
}

[[noreturn]] void fail(const std::string& message) { throw CheckFailed(message); }
[[noreturn]] void skip(const std::string& reason) { throw CheckSkipped(reason); }

const std::vector<Check>& all_checks()
{
    static const std::vector<Check> checks = [] {
        std::vector<Check> v;
        append_negotiation_checks(v);
        append_device_checks(v);
        append_lifetime_checks(v);
        append_growth_checks(v);
        return v;
    }();
    return checks;
}

}  // namespace lapse::cli
