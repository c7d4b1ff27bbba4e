// The C host API (lapse/host_api.h): a thin layer over the C++ API.
//
// Handles own the C++ objects (Runtime, Config, Device). Windows and
// durations are the C++ Window and Duration themselves, constructed in the
// caller's storage (placement new), so the hot path is the C++ API's
// inline path plus one call, and a caller's array of lapse_host_duration is
// a span of Duration for Device::resolve. No exception leaves this file:
// each entry point catches at the boundary and answers a status.
#include "host_api_support.hpp"

#include <lapse/core.hpp>
#include <lapse/host_api.h>

#include <spdlog/logger.h>
#include <spdlog/sinks/base_sink.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <utility>

namespace {

using lapse::host_api::fail;
using lapse::host_api::guarded;
using lapse::host_api::null_argument;
using lapse::host_api::write_error;

static_assert(sizeof(lapse::Window) <= sizeof(lapse_host_window) &&
                  alignof(lapse::Window) <= alignof(lapse_host_window),
              "lapse_host_window must hold a lapse::Window: grow it (a new C host API major)");
// Exactly: an array of lapse_host_duration is resolved as a span of Duration.
static_assert(sizeof(lapse::Duration) == sizeof(lapse_host_duration) &&
                  alignof(lapse::Duration) == alignof(lapse_host_duration),
              "lapse_host_duration must be a lapse::Duration bit for bit (a new C host API major)");
static_assert(int(lapse::Window::Kind::closed) == LAPSE_HOST_WINDOW_CLOSED &&
                  int(lapse::Window::Kind::device) == LAPSE_HOST_WINDOW_DEVICE &&
                  int(lapse::Window::Kind::system) == LAPSE_HOST_WINDOW_SYSTEM &&
                  int(lapse::Window::Kind::failed) == LAPSE_HOST_WINDOW_FAILED,
              "lapse_host_window_kind mirrors lapse::Window::Kind");

// The caller's storage seen as the object in it. An all-zero window reads
// as a closed one (kind closed, no device, no note), which the header
// promises.
lapse::Window& as_window(lapse_host_window* w) noexcept { return *std::launder(reinterpret_cast<lapse::Window*>(w)); }
const lapse::Window& as_window(const lapse_host_window* w) noexcept
{
    return *std::launder(reinterpret_cast<const lapse::Window*>(w));
}
lapse::Duration& as_duration(lapse_host_duration* d) noexcept
{
    return *std::launder(reinterpret_cast<lapse::Duration*>(d));
}

std::chrono::nanoseconds to_timeout(uint64_t ns) noexcept
{
    if (ns == LAPSE_WAIT_FOREVER || ns > uint64_t(lapse::wait_forever.count())) return lapse::wait_forever;
    return std::chrono::nanoseconds(static_cast<int64_t>(ns));
}

// A duration as the C ABI's struct; struct_size is the caller's.
void read_duration(const lapse::Duration& d, lapse_duration* out) noexcept
{
    if (out == nullptr) return;
    out->state = static_cast<uint32_t>(d.state());
    out->method = static_cast<uint32_t>(d.method());
    out->failure = d.error_status();
    out->flags = static_cast<uint16_t>(d.flags());
    out->queued_ops = static_cast<uint16_t>(d.queued_ops());
    if (auto iv = d.interval()) {
        out->clock_domain = static_cast<uint32_t>(iv->domain);
        out->start_ns = iv->start_ns;
        out->end_ns = iv->end_ns;
    } else {
        out->clock_domain = LAPSE_CLOCK_NONE;
        out->start_ns = 0;
        out->end_ns = 0;
    }
}

lapse_status duration_status(const lapse::Duration& d, lapse_error* error) noexcept
{
    if (d.failed()) return fail(error, d.error_status(), d.error_message());
    return d.pending() ? LAPSE_NOT_READY : LAPSE_OK;
}

// spdlog -> the host's log callback (the runtime's logger when one is given).
class CallbackSink final : public spdlog::sinks::base_sink<std::mutex> {
public:
    CallbackSink(lapse_host_log_fn fn, void* user) : fn_(fn), user_(user) {}

protected:
    void sink_it_(const spdlog::details::log_msg& msg) override
    {
        std::string line(msg.payload.data(), msg.payload.size());
        fn_(user_, to_lapse(msg.level), line.c_str());
    }
    void flush_() override {}

private:
    static lapse_log_level to_lapse(spdlog::level::level_enum level) noexcept
    {
        switch (level) {
        case spdlog::level::trace: return LAPSE_LOG_TRACE;
        case spdlog::level::debug: return LAPSE_LOG_DEBUG;
        case spdlog::level::info: return LAPSE_LOG_INFO;
        case spdlog::level::warn: return LAPSE_LOG_WARN;
        default: return LAPSE_LOG_ERROR;
        }
    }
    lapse_host_log_fn fn_;
    void* user_;
};

spdlog::level::level_enum to_spdlog(int32_t level) noexcept
{
    switch (level) {
    case LAPSE_LOG_TRACE: return spdlog::level::trace;
    case LAPSE_LOG_DEBUG: return spdlog::level::debug;
    case LAPSE_LOG_INFO: return spdlog::level::info;
    case LAPSE_LOG_WARN: return spdlog::level::warn;
    default: return spdlog::level::err;
    }
}

// Submitted C work: runs fn once, calls destroy once (also when the work
// is refused and only destroyed).
struct CWork {
    lapse_work_fn fn;
    void* user;
    void (*destroy)(void*);

    CWork(lapse_work_fn f, void* u, void (*d)(void*)) noexcept : fn(f), user(u), destroy(d) {}
    CWork(CWork&& other) noexcept : fn(other.fn), user(other.user), destroy(std::exchange(other.destroy, nullptr)) {}
    CWork(const CWork&) = delete;
    CWork& operator=(const CWork&) = delete;
    CWork& operator=(CWork&&) = delete;
    ~CWork()
    {
        if (destroy != nullptr) destroy(user);
    }
    void operator()(void* native) const { fn(user, native); }
};

// Thrown through Device::profile when a C closure declines: the C++ API's
// guard abandons the window on the way out.
struct ClosureDeclined {
    lapse_status status;
};

// The window hot path's cold parts, out of line (see lapse_host_profile_start).
// A start without a device or an out: *out (if any) reads closed.
[[gnu::noinline, gnu::cold]] lapse_status start_refused(const char* call, const lapse_host_device* device,
                                                        lapse_host_window* out, lapse_error* error) noexcept
{
    if (out != nullptr) new (out) lapse::Window();
    return null_argument(error, call, device == nullptr ? "device" : "out");
}

[[gnu::noinline, gnu::cold]] lapse_status start_slow(lapse_host_device* device, lapse_stream stream, const char* name,
                                                     lapse_host_window* out, lapse_error* error) noexcept
{
    if (device == nullptr || out == nullptr) return start_refused("lapse_host_profile_start", device, out, error);
    try {
        auto* w = new (out) lapse::Window(device->device.profile_start(stream, name));
        if (w->kind() == lapse::Window::Kind::failed) return fail(error, w->error_status(), w->error_message());
        return LAPSE_OK;
    } catch (const std::bad_alloc&) {
        new (out) lapse::Window();
        return fail(error, LAPSE_ERROR_OUT_OF_MEMORY, "lapse_host_profile_start: out of memory for the window's name");
    }
}

[[gnu::noinline, gnu::cold]] lapse_status start_failed(const lapse::Window& w, lapse_error* error) noexcept
{
    return fail(error, w.error_status(), w.error_message());
}

[[gnu::noinline, gnu::cold]] lapse_status start_out_of_memory(lapse_host_window* out, lapse_error* error) noexcept
{
    new (out) lapse::Window();
    return fail(error, LAPSE_ERROR_OUT_OF_MEMORY, "lapse_host_profile_start: out of memory");
}

[[gnu::noinline, gnu::cold]] lapse_status end_refused(lapse_host_device* device, lapse_host_window* window,
                                                      uint32_t flags, lapse_host_duration* out,
                                                      lapse_error* error) noexcept
{
    constexpr const char* call = "lapse_host_profile_end";
    if (out != nullptr) new (out) lapse::Duration();
    if (device == nullptr || window == nullptr || out == nullptr)
        return null_argument(error, call, device == nullptr ? "device" : window == nullptr ? "window" : "out");
    try {
        return fail(error, LAPSE_ERROR_INVALID_ARGUMENT,
                    std::string(call) + ": unknown flags " + std::to_string(flags) + " (the window is left open)");
    } catch (...) {
        return fail(error, LAPSE_ERROR_INVALID_ARGUMENT, call);
    }
}

[[gnu::noinline, gnu::cold]] lapse_status end_failed(const lapse::Duration& d, lapse_error* error) noexcept
{
    return fail(error, d.error_status(), d.error_message());
}

}  // namespace

extern "C" {

uint32_t lapse_host_api_version(void) { return LAPSE_HOST_API_VERSION; }

// ---- runtime ----------------------------------------------------------------

lapse_status lapse_host_runtime_create(const lapse_host_runtime_options* options, lapse_host_runtime** out,
                                       lapse_error* error)
{
    constexpr const char* call = "lapse_host_runtime_create";
    if (out == nullptr) return null_argument(error, call, "out");
    *out = nullptr;
    if (options != nullptr && options->struct_size < sizeof(lapse_host_runtime_options))
        return fail(error, LAPSE_ERROR_INVALID_ARGUMENT,
                    std::string(call) + ": options->struct_size " + std::to_string(options->struct_size) +
                        " is smaller than sizeof(lapse_host_runtime_options) " +
                        std::to_string(sizeof(lapse_host_runtime_options)));
    return guarded(error, call, [&]() -> lapse_status {
        lapse::RuntimeOptions o;
        if (options != nullptr) {
            if (options->search_path_count > 0 && options->search_paths == nullptr)
                return null_argument(error, call, "options->search_paths");
            for (uint32_t i = 0; i < options->search_path_count; ++i) {
                if (options->search_paths[i] == nullptr)
                    return fail(error, LAPSE_ERROR_INVALID_ARGUMENT,
                                std::string(call) + ": options->search_paths[" + std::to_string(i) + "] is NULL");
                o.search_paths.emplace_back(options->search_paths[i]);
            }
            if (options->log != nullptr) {
                auto sink = std::make_shared<CallbackSink>(options->log, options->log_user);
                o.logger = std::make_shared<spdlog::logger>("lapse", std::move(sink));
                o.logger->set_level(to_spdlog(options->log_level));
            }
        }
        *out = new lapse_host_runtime{lapse::Runtime(std::move(o))};
        return LAPSE_OK;
    });
}

void lapse_host_runtime_destroy(lapse_host_runtime* runtime) { delete runtime; }

// ---- configs ----------------------------------------------------------------

lapse_status lapse_host_config_from_file(const char* path, lapse_host_config** out, lapse_error* error)
{
    constexpr const char* call = "lapse_host_config_from_file";
    if (out == nullptr) return null_argument(error, call, "out");
    *out = nullptr;
    if (path == nullptr) return null_argument(error, call, "path");
    return guarded(error, call, [&]() -> lapse_status {
        *out = new lapse_host_config{lapse::Config::from_file(path)};
        return LAPSE_OK;
    });
}

lapse_status lapse_host_config_from_string(const char* text, const char* source_name, const char* base_dir,
                                           lapse_host_config** out, lapse_error* error)
{
    constexpr const char* call = "lapse_host_config_from_string";
    if (out == nullptr) return null_argument(error, call, "out");
    *out = nullptr;
    if (text == nullptr) return null_argument(error, call, "text");
    return guarded(error, call, [&]() -> lapse_status {
        std::filesystem::path base = base_dir != nullptr ? std::filesystem::path(base_dir)
                                                         : std::filesystem::current_path();
        *out = new lapse_host_config{
            lapse::Config::from_string(text, source_name != nullptr ? source_name : "<string>", std::move(base))};
        return LAPSE_OK;
    });
}

lapse_status lapse_host_config_builtin(lapse_host_config** out, lapse_error* error)
{
    constexpr const char* call = "lapse_host_config_builtin";
    if (out == nullptr) return null_argument(error, call, "out");
    *out = nullptr;
    return guarded(error, call, [&]() -> lapse_status {
        *out = new lapse_host_config{lapse::Config::builtin()};
        return LAPSE_OK;
    });
}

lapse_status lapse_host_config_default(lapse_host_config** out, lapse_error* error)
{
    constexpr const char* call = "lapse_host_config_default";
    if (out == nullptr) return null_argument(error, call, "out");
    *out = nullptr;
    return guarded(error, call, [&]() -> lapse_status {
        *out = new lapse_host_config{lapse::default_config()};
        return LAPSE_OK;
    });
}

void lapse_host_config_destroy(lapse_host_config* config) { delete config; }

// ---- devices ----------------------------------------------------------------

lapse_status lapse_host_open(lapse_host_runtime* runtime, const lapse_host_config* config, lapse_host_device** out,
                             lapse_error* error)
{
    constexpr const char* call = "lapse_host_open";
    if (out == nullptr) return null_argument(error, call, "out");
    *out = nullptr;
    if (runtime == nullptr) return null_argument(error, call, "runtime");
    if (config == nullptr) return null_argument(error, call, "config");
    return guarded(error, call, [&]() -> lapse_status {
        *out = new lapse_host_device{runtime->runtime.open(config->config)};
        return LAPSE_OK;
    });
}

lapse_status lapse_host_open_default(lapse_host_runtime* runtime, lapse_host_device** out, lapse_error* error)
{
    constexpr const char* call = "lapse_host_open_default";
    if (out == nullptr) return null_argument(error, call, "out");
    *out = nullptr;
    if (runtime == nullptr) return null_argument(error, call, "runtime");
    return guarded(error, call, [&]() -> lapse_status {
        *out = new lapse_host_device{runtime->runtime.open_default()};
        return LAPSE_OK;
    });
}

void lapse_host_device_close(lapse_host_device* device)
{
    if (device != nullptr) device->device.close();
}

void lapse_host_device_destroy(lapse_host_device* device) { delete device; }

lapse_status lapse_host_device_describe(const lapse_host_device* device, lapse_host_device_info* out,
                                        lapse_error* error)
{
    constexpr const char* call = "lapse_host_device_describe";
    if (device == nullptr) return null_argument(error, call, "device");
    if (out == nullptr) return null_argument(error, call, "out");
    if (out->struct_size < sizeof(lapse_host_device_info))
        return fail(error, LAPSE_ERROR_INVALID_ARGUMENT,
                    std::string(call) + ": out->struct_size " + std::to_string(out->struct_size) +
                        " is smaller than sizeof(lapse_host_device_info) " +
                        std::to_string(sizeof(lapse_host_device_info)));
    if (!device->device) return fail(error, LAPSE_ERROR_CLOSED, std::string(call) + ": the device is closed");
    return guarded(error, call, [&]() -> lapse_status {
        const lapse::DeviceInfo& info = device->device.info();
        out->stream_count = info.stream_count;
        out->capabilities = info.capabilities;
        out->name = info.name.c_str();
        out->plugin = info.plugin.c_str();
        out->plugin_version = info.plugin_version.c_str();
        out->plugin_file = info.plugin_file.c_str();
        return LAPSE_OK;
    });
}

lapse_status lapse_host_submit(lapse_host_device* device, lapse_stream stream, lapse_work_fn fn, void* user,
                               void (*destroy)(void*), lapse_error* error)
{
    constexpr const char* call = "lapse_host_submit";
    if (device == nullptr || fn == nullptr) {
        if (destroy != nullptr) destroy(user);  // refused: lapse is done with it
        return null_argument(error, call, device == nullptr ? "device" : "fn");
    }
    return guarded(error, call, [&]() -> lapse_status {
        // The box's destructor calls destroy, on every path out of submit.
        device->device.submit(stream, CWork(fn, user, destroy));
        return LAPSE_OK;
    });
}

lapse_status lapse_host_sync(lapse_host_device* device, lapse_stream stream, lapse_error* error)
{
    constexpr const char* call = "lapse_host_sync";
    if (device == nullptr) return null_argument(error, call, "device");
    return guarded(error, call, [&]() -> lapse_status {
        device->device.sync(stream);
        return LAPSE_OK;
    });
}

// ---- windows ----------------------------------------------------------------

lapse_status lapse_host_profile_start(lapse_host_device* device, lapse_stream stream, const char* name,
                                      lapse_host_window* out, lapse_error* error)
{
    // Named windows and bad arguments take the out-of-line path, so that
    // this one keeps few values live across the plugin call.
    if (device == nullptr || out == nullptr || (name != nullptr && name[0] != '\0')) [[unlikely]]
        return start_slow(device, stream, name, out, error);
    try {
        auto* w = new (out) lapse::Window(device->device.profile_start(stream));
        if (w->kind() == lapse::Window::Kind::failed) [[unlikely]]
            return start_failed(*w, error);
        return LAPSE_OK;
    } catch (const std::bad_alloc&) {  // a failure's message could not be kept
        return start_out_of_memory(out, error);
    }
}

lapse_status lapse_host_name_intern(const char* text, const lapse_host_name** out, lapse_error* error)
{
    constexpr const char* call = "lapse_host_name_intern";
    if (out == nullptr) return null_argument(error, call, "out");
    *out = nullptr;
    try {
        const lapse::Name name(text != nullptr ? std::string_view(text) : std::string_view());
        *out = reinterpret_cast<const lapse_host_name*>(name.entry());
        return LAPSE_OK;
    } catch (const std::bad_alloc&) {
        return fail(error, LAPSE_ERROR_OUT_OF_MEMORY, "lapse_host_name_intern: out of memory for the name's entry");
    }
}

lapse_status lapse_host_profile_start_named(lapse_host_device* device, lapse_stream stream,
                                            const lapse_host_name* name, lapse_host_window* out, lapse_error* error)
{
    if (device == nullptr || out == nullptr) [[unlikely]]
        return start_refused("lapse_host_profile_start_named", device, out, error);
    const lapse::Name n = lapse::Name::from_entry(reinterpret_cast<const lapse::detail::InternedName*>(name));
    try {
        auto* w = new (out) lapse::Window(device->device.profile_start(stream, n));
        if (w->kind() == lapse::Window::Kind::failed) [[unlikely]]
            return start_failed(*w, error);
        return LAPSE_OK;
    } catch (const std::bad_alloc&) {  // the window's note, or a failure's message
        return start_out_of_memory(out, error);
    }
}

lapse_status lapse_host_profile_end(lapse_host_device* device, lapse_host_window* window, uint32_t flags,
                                    lapse_host_duration* out, lapse_error* error)
{
    if (device == nullptr || window == nullptr || out == nullptr || (flags & ~uint32_t(LAPSE_END_FLUSH)) != 0)
        [[unlikely]]
        return end_refused(device, window, flags, out, error);
    try {
        auto* d = new (out) lapse::Duration(
            device->device.profile_end(as_window(window), lapse::EndOptions{(flags & LAPSE_END_FLUSH) != 0}));
        if (d->failed()) [[unlikely]]
            return end_failed(*d, error);
        return LAPSE_OK;
    } catch (const std::bad_alloc&) {  // a failure's message could not be kept
        new (out) lapse::Duration();
        return fail(error, LAPSE_ERROR_OUT_OF_MEMORY, "lapse_host_profile_end");
    }
}

void lapse_host_profile_abandon(lapse_host_device* device, lapse_host_window* window)
{
    if (window == nullptr) return;
    lapse::Window& w = as_window(window);
    if (device != nullptr)
        device->device.profile_abandon(w);
    else
        w = lapse::Window();  // releases what it holds, as abandon does
}

lapse_host_window_kind lapse_host_window_kind_of(const lapse_host_window* window)
{
    if (window == nullptr) return LAPSE_HOST_WINDOW_CLOSED;
    return static_cast<lapse_host_window_kind>(as_window(window).kind());
}

lapse_status lapse_host_window_token(const lapse_host_window* window, lapse_token* out, lapse_error* error)
{
    constexpr const char* call = "lapse_host_window_token";
    if (window == nullptr) return null_argument(error, call, "window");
    if (out == nullptr) return null_argument(error, call, "out");
    const lapse::Window& w = as_window(window);
    if (w.kind() != lapse::Window::Kind::device)
        return fail(error, LAPSE_ERROR_INVALID_ARGUMENT,
                    std::string(call) + ": the window is not a device window (kind " +
                        std::to_string(int(w.kind())) + "): it has no token");
    *out = w.token();
    return LAPSE_OK;
}

lapse_status lapse_host_profile(lapse_host_device* device, lapse_stream stream, lapse_host_closure_fn closure,
                                void* user, const lapse_host_profile_options* options, lapse_host_duration* out,
                                lapse_error* error)
{
    constexpr const char* call = "lapse_host_profile";
    if (out == nullptr) return null_argument(error, call, "out");
    new (out) lapse::Duration();
    if (device == nullptr) return null_argument(error, call, "device");
    if (closure == nullptr) return null_argument(error, call, "closure");
    if (options != nullptr && options->struct_size < sizeof(lapse_host_profile_options))
        return fail(error, LAPSE_ERROR_INVALID_ARGUMENT,
                    std::string(call) + ": options->struct_size " + std::to_string(options->struct_size) +
                        " is smaller than sizeof(lapse_host_profile_options)");
    lapse::ProfileOptions o;
    if (options != nullptr) {
        if ((options->flags & ~uint32_t(LAPSE_END_FLUSH)) != 0)
            return fail(error, LAPSE_ERROR_INVALID_ARGUMENT,
                        std::string(call) + ": unknown flags " + std::to_string(options->flags));
        o.flush = (options->flags & LAPSE_END_FLUSH) != 0;
        if (options->name != nullptr) o.name = options->name;
    }
    return guarded(error, call, [&]() -> lapse_status {
        try {
            as_duration(out) = device->device.profile(stream, [&] {
                lapse_status s = closure(user);
                if (s != LAPSE_OK) throw ClosureDeclined{s};
            }, o);
        } catch (const ClosureDeclined& declined) {
            return fail(error, declined.status,
                        std::string(call) + ": the closure returned " + lapse_status_name(declined.status) +
                            " (" + std::to_string(declined.status) + "): the window on stream " +
                            std::to_string(stream) + " was abandoned");
        }
        const lapse::Duration& d = as_duration(out);
        return d.failed() ? fail(error, d.error_status(), d.error_message()) : LAPSE_OK;
    });
}

// ---- durations --------------------------------------------------------------

void lapse_host_duration_init(lapse_host_duration* duration)
{
    if (duration != nullptr) new (duration) lapse::Duration();
}

lapse_status lapse_host_duration_resolve(lapse_host_duration* duration, uint64_t timeout_ns, lapse_duration* out,
                                         lapse_error* error)
{
    constexpr const char* call = "lapse_host_duration_resolve";
    if (duration == nullptr) return null_argument(error, call, "duration");
    return guarded(error, call, [&]() -> lapse_status {
        lapse::Duration& d = as_duration(duration);
        d.resolve(to_timeout(timeout_ns));
        read_duration(d, out);
        return duration_status(d, error);
    });
}

lapse_status lapse_host_resolve(lapse_host_device* device, lapse_host_duration* durations, uint32_t count,
                                uint64_t timeout_ns, lapse_duration* out, lapse_error* error)
{
    constexpr const char* call = "lapse_host_resolve";
    if (count == 0) return LAPSE_OK;
    if (device == nullptr) return null_argument(error, call, "device");
    if (durations == nullptr) return null_argument(error, call, "durations");
    if (out != nullptr && out[0].struct_size < sizeof(lapse_duration))
        return fail(error, LAPSE_ERROR_INVALID_ARGUMENT,
                    std::string(call) + ": out[0].struct_size " + std::to_string(out[0].struct_size) +
                        " is smaller than sizeof(lapse_duration)");
    return guarded(error, call, [&]() -> lapse_status {
        std::span<lapse::Duration> span(&as_duration(durations), count);
        bool final = device->device.resolve(span, to_timeout(timeout_ns));
        lapse_status first_failure = LAPSE_OK;
        for (uint32_t i = 0; i < count; ++i) {
            const lapse::Duration& d = span[i];
            if (out != nullptr) {
                out[i].struct_size = out[0].struct_size;
                read_duration(d, &out[i]);
            }
            if (d.failed() && first_failure == LAPSE_OK) {
                first_failure = d.error_status();
                write_error(error, first_failure,
                            std::string(call) + ": durations[" + std::to_string(i) + "]: " +
                                std::string(d.error_message()));
            }
        }
        if (first_failure != LAPSE_OK) return first_failure;
        return final ? LAPSE_OK : LAPSE_NOT_READY;
    });
}

void lapse_host_duration_abandon(lapse_host_duration* duration)
{
    if (duration != nullptr) as_duration(duration).abandon();
}

void lapse_host_duration_release(lapse_host_duration* duration)
{
    if (duration != nullptr) as_duration(duration) = lapse::Duration();
}

// ---- extensions and the raw C ABI -------------------------------------------

const void* lapse_host_device_extension(const lapse_host_device* device, const char* id)
{
    if (device == nullptr) return nullptr;
    return device->device.extension(id);
}

lapse_status lapse_host_device_raw(const lapse_host_device* device, const lapse_plugin** plugin,
                                   lapse_device** raw_device, lapse_error* error)
{
    constexpr const char* call = "lapse_host_device_raw";
    if (device == nullptr) return null_argument(error, call, "device");
    if (plugin == nullptr || raw_device == nullptr)
        return null_argument(error, call, plugin == nullptr ? "plugin" : "raw_device");
    if (!device->device) return fail(error, LAPSE_ERROR_CLOSED, std::string(call) + ": the device is closed");
    *plugin = &device->device.plugin();
    *raw_device = device->device.handle();
    return LAPSE_OK;
}

}  // extern "C"
