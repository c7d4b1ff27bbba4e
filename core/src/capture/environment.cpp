// LAPSE_CONFIG, LAPSE_CAPTURE, LAPSE_DISABLE (environment.hpp).
#include "environment.hpp"

#include <lapse/plugin.h>

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

std::shared_ptr<Capture> environment_capture(const std::string& path)
{
    std::lock_guard lock(environment_mutex());
    std::shared_ptr<Capture>& capture = environment_captures()[path];
    if (!capture) {
        CaptureOptions options;
        options.path = path;
        capture = Capture::open(std::move(options));
        static const bool registered = (std::atexit(close_environment_captures), true);
        (void)registered;
    }
    return capture;
}

Environment read_environment()
{
    Environment e;
    e.config = variable("LAPSE_CONFIG");
    e.capture = variable("LAPSE_CAPTURE");
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
