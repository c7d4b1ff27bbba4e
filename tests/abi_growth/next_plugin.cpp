// A plugin as the next minor version will build it: compiled against the
// synthetic "minor + 1" headers (every struct one field longer), through the
// SDK's adapter. It times windows with the host clock and fills the
// appended fields, so a host of today's minor proves it is only given the
// bytes it has room for.
#include <lapse/lapse.h>
#include <lapse/sdk/duration.hpp>
#include <lapse/sdk/plugin.hpp>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <unordered_map>

static_assert(LAPSE_ABI_MINOR >= 1, "built against the synthetic next-minor headers");

namespace {

constexpr uint64_t kNextMagic = 0x4e4558544e455854ull;  // "NEXTNEXT"

struct NextDevice {
    static std::unique_ptr<NextDevice> open(lapse::sdk::Host host, lapse::sdk::Config config)
    {
        auto d = std::make_unique<NextDevice>();
        d->streams = static_cast<uint32_t>(config.integer("streams", 2, 1, 8));
        host.info("next-minor device open");
        return d;
    }

    void describe(lapse_device_info& info)
    {
        info.stream_count = streams;
        info.capabilities = LAPSE_CAP_DEVICE_CLOCK | LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING |
                            LAPSE_CAP_SPLIT_THREADS | LAPSE_CAP_HOST_TIMELINE;
        std::snprintf(info.name, sizeof info.name, "next minor device");
        info.next_minor_field = kNextMagic;
    }
    lapse_status sync(lapse_stream, lapse_error*) { return LAPSE_OK; }
    lapse_status submit(lapse_stream stream, lapse_work_fn fn, void* user, lapse_error* error)
    {
        if (stream >= streams) return lapse::sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "submit: bad stream");
        fn(user, nullptr);
        return LAPSE_OK;
    }
    lapse_status profile_start(lapse_stream stream, lapse_token& token, lapse_error* error)
    {
        if (stream >= streams)
            return lapse::sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "profile_start: bad stream");
        std::lock_guard lock(mutex);
        token = lapse_token{next_id++, stream, 0};
        windows[token.id] = Record{lapse::sdk::monotonic_ns(), -1};
        return LAPSE_OK;
    }
    lapse_status profile_end(lapse_token token, uint32_t, lapse_error* error)
    {
        std::lock_guard lock(mutex);
        auto it = windows.find(token.id);
        if (it == windows.end() || it->second.end_ns >= 0)
            return lapse::sdk::fail(error, LAPSE_ERROR_INVALID_TOKEN, "profile_end: unknown token");
        it->second.end_ns = lapse::sdk::monotonic_ns();
        return LAPSE_OK;
    }
    void profile_abandon(lapse_token token) noexcept
    {
        std::lock_guard lock(mutex);
        windows.erase(token.id);
    }
    lapse_status resolve(const lapse_token* tokens, lapse_duration* out, uint32_t count, uint64_t, lapse_error* error)
    {
        std::lock_guard lock(mutex);
        lapse_status status = LAPSE_OK;
        for (uint32_t i = 0; i < count; ++i) {
            auto it = windows.find(tokens[i].id);
            if (it == windows.end() || it->second.end_ns < 0) {
                lapse::sdk::set_duration(out[i], LAPSE_DURATION_FAILED, LAPSE_ERROR_INVALID_TOKEN);
                if (status == LAPSE_OK)
                    status = lapse::sdk::fail(error, LAPSE_ERROR_INVALID_TOKEN, "resolve: unknown token");
            } else {
                lapse::sdk::set_duration(out[i], LAPSE_DURATION_READY, LAPSE_OK, LAPSE_TIMING_DEVICE,
                                         LAPSE_CLOCK_HOST_MONOTONIC, it->second.start_ns, it->second.end_ns);
                windows.erase(it);
            }
            out[i].next_minor_field = kNextMagic;  // what a newer plugin writes past today's fields
        }
        return status;
    }

    struct Record {
        int64_t start_ns;
        int64_t end_ns;
    };
    uint32_t streams = 2;
    std::mutex mutex;
    uint64_t next_id = 1;
    std::unordered_map<uint64_t, Record> windows;
};

}  // namespace

LAPSE_PLUGIN_ENTRY
{
    if (!lapse::sdk::host_is_compatible(host, "next_minor")) return nullptr;
    static const lapse_plugin plugin = [] {
        lapse_plugin p = lapse::sdk::make_plugin<NextDevice>("next_minor", "0.1.0",
                                                             "built against the synthetic next-minor headers",
                                                             LAPSE_CAP_DEVICE_CLOCK | LAPSE_CAP_HOST_TIMELINE);
        p.next_minor_field = kNextMagic;
        return p;
    }();
    return &plugin;
}
