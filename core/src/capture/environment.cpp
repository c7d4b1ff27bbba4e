// LAPSE_CONFIG, LAPSE_CAPTURE (and its settings), LAPSE_DISABLE (environment.hpp).
#include "environment.hpp"

#include <lapse/core/error.hpp>
#include <lapse/plugin.h>

#include <cctype>

#include <cstdlib>
#include <map>
#include <mutex>
#include <cstring>

namespace lapse::detail {

namespace {

std::string variable(const char* name)
{
    const char* v = std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
}

// The disabled backend: as little as a window can cost (two indirect calls
// that return at once) and no state at all.
struct DisabledDevice {
    int unused;
};
DisabledDevice disabled_device_instance;

lapse_status d_open(const lapse_host*, const lapse_config*, lapse_device**, lapse_error*) { return LAPSE_ERROR_UNAVAILABLE; }
void d_close(lapse_device*) {}
lapse_status d_describe(lapse_device*, lapse_device_info* out, lapse_error*)
{
    std::strncpy(out->name, "disabled (LAPSE_DISABLE)", sizeof out->name - 1);
    out->stream_count = 2;
    out->capabilities = LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING | LAPSE_CAP_SPLIT_THREADS;
    return LAPSE_OK;
}
lapse_status d_sync(lapse_device*, lapse_stream, lapse_error*) { return LAPSE_OK; }
lapse_status d_submit(lapse_device*, lapse_stream, lapse_work_fn fn, void* user, lapse_error*)
{
    fn(user, nullptr);  // runs it now: stream order holds trivially
    return LAPSE_OK;
}
lapse_status d_start(lapse_device*, lapse_stream, lapse_token* token, lapse_error*)
{
    token->id = 0;
    return LAPSE_OK;
}
lapse_status d_end(lapse_device*, lapse_token, const lapse_end_options*, lapse_error*) { return LAPSE_OK; }
void d_abandon(lapse_device*, lapse_token) {}
lapse_status d_resolve(lapse_device*, const lapse_token*, lapse_duration* out, uint32_t count, uint64_t, lapse_error*)
{
    for (uint32_t i = 0; i < count; ++i) {
        out[i].state = LAPSE_DURATION_NOT_MEASURED;
        out[i].method = LAPSE_TIMING_NONE;
        out[i].clock_domain = LAPSE_CLOCK_NONE;
        out[i].start_ns = out[i].end_ns = 0;
        out[i].failure = LAPSE_OK;
    }
    return LAPSE_OK;
}
const void* d_extension(lapse_device*, const char*) { return nullptr; }

const lapse_plugin disabled_plugin = {
    sizeof(lapse_plugin), LAPSE_ABI_MAJOR, LAPSE_ABI_MINOR, 0, "disabled", "", "LAPSE_DISABLE: every window is a no-op",
    0, d_open, d_close, d_describe, d_sync, d_submit, d_start, d_end, d_abandon, d_resolve, d_extension,
};

}  // namespace

namespace {
std::mutex& environment_mutex()
{
    static std::mutex m;
    return m;
}
// Never destroyed: devices in static objects may still record while the
// process exits; they meet a closed capture, not a freed one.
std::map<std::string, std::shared_ptr<Capture>>& environment_captures()
{
    static auto* kept = new std::map<std::string, std::shared_ptr<Capture>>();
    return *kept;
}
void close_environment_captures()
{
    std::lock_guard lock(environment_mutex());
    for (auto& [path, capture] : environment_captures()) capture->close();
}
}  // namespace

std::shared_ptr<Capture> environment_capture(const std::string& path, CaptureOptions options)
{
    std::lock_guard lock(environment_mutex());
    std::shared_ptr<Capture>& capture = environment_captures()[path];
    if (!capture) {
        options.path = path;
        options.sink = nullptr;
        capture = Capture::open(std::move(options));
        static const bool registered = (std::atexit(close_environment_captures), true);
        (void)registered;
    }
    return capture;
}

namespace {
[[noreturn]] void bad_setting(const std::string& what, const std::string& text, const std::string& cause)
{
    throw Error(LAPSE_ERROR_CONFIG, what + "='" + text + "': " + cause);
}
}  // namespace

uint64_t parse_capture_budget(const std::string& text, const std::string& what)
{
    std::size_t i = 0;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    const std::size_t digits = i;
    uint64_t number = 0;
    for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
        if (number > (uint64_t{1} << 40)) bad_setting(what, text, "out of range (64 KiB to 1 TiB)");
        number = number * 10 + static_cast<uint64_t>(text[i] - '0');
    }
    if (i == digits) bad_setting(what, text, "not a size (say 8MiB, \"512 KiB\" or 4194304)");
    while (i < text.size() && text[i] == ' ') ++i;
    std::string unit = text.substr(i);
    while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.back()))) unit.pop_back();
    const uint64_t scale = unit.empty() || unit == "B" ? 1
                           : unit == "KiB"             ? uint64_t{1} << 10
                           : unit == "MiB"             ? uint64_t{1} << 20
                           : unit == "GiB"             ? uint64_t{1} << 30
                                                       : 0;
    if (scale == 0) bad_setting(what, text, "unknown unit '" + unit + "' (B, KiB, MiB or GiB)");
    if (number > (uint64_t{1} << 40) / scale || number * scale < 64 * 1024)
        bad_setting(what, text, "out of range (64 KiB to 1 TiB)");
    return number * scale;
}

CapturePolicy parse_capture_policy(const std::string& text, const std::string& what)
{
    if (text == "drop") return CapturePolicy::drop;
    if (text == "block") return CapturePolicy::block;
    bad_setting(what, text, "unknown policy (drop or block)");
}

Environment read_environment()
{
    Environment e;
    e.config = variable("LAPSE_CONFIG");
    e.capture = variable("LAPSE_CAPTURE");
    if (const std::string budget = variable("LAPSE_CAPTURE_BUDGET"); !budget.empty())
        e.capture_options.budget_bytes = parse_capture_budget(budget, "LAPSE_CAPTURE_BUDGET");
    if (const std::string policy = variable("LAPSE_CAPTURE_POLICY"); !policy.empty())
        e.capture_options.policy = parse_capture_policy(policy, "LAPSE_CAPTURE_POLICY");
    if (const std::string flush = variable("LAPSE_CAPTURE_FLUSH_MS"); !flush.empty()) {
        std::size_t used = 0;
        long ms = 0;
        try {
            ms = std::stol(flush, &used);
        } catch (...) {
            used = 0;
        }
        if (used == 0 || used != flush.size()) bad_setting("LAPSE_CAPTURE_FLUSH_MS", flush, "not a whole number of milliseconds");
        if (ms < 1 || ms > 100) bad_setting("LAPSE_CAPTURE_FLUSH_MS", flush, "out of range (1 to 100)");
        e.capture_options.flush_interval = std::chrono::milliseconds(ms);
    }
    const std::string disable = variable("LAPSE_DISABLE");
    e.disabled = !disable.empty() && disable != "0";
    return e;
}

OpenedBackend open_disabled_backend()
{
    OpenedBackend b;
    b.plugin = &disabled_plugin;
    b.device = reinterpret_cast<lapse_device*>(&disabled_device_instance);
    return b;
}

}  // namespace lapse::detail
