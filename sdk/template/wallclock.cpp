// wallclock — a minimal, complete lapse backend to copy.
//
// Its "device" is the calling thread: submit runs the work at once, so a
// window is two stamps of CLOCK_MONOTONIC (the host clock) taken by
// profile_start and profile_end around whatever ran in between. Windows nest,
// overlap and may end on another thread because each is keyed on its token
// (sdk::WindowTable does the bookkeeping and catches misused tokens).
#include <lapse/lapse.h>
#include <lapse/sdk/plugin.hpp>
#include <lapse/sdk/window_table.hpp>

#include <atomic>
#include <cinttypes>
#include <memory>

namespace {

struct Stamps {
    std::atomic<int64_t> start_ns{0}, end_ns{0};
};

class WallclockDevice {
public:
    static std::unique_ptr<WallclockDevice> open(lapse::sdk::Host, lapse::sdk::Config config)
    {
        // Read every key you accept: the host refuses keys nobody read.
        const auto streams = static_cast<uint32_t>(config.integer("streams", 1, 1, 64));
        return std::make_unique<WallclockDevice>(streams);
    }
    explicit WallclockDevice(uint32_t streams) : streams_(streams), windows_(streams, 64) {}

    void describe(lapse_device_info& info)
    {
        info.stream_count = streams_;
        info.capabilities = LAPSE_CAP_DEVICE_CLOCK | LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING |
                            LAPSE_CAP_SPLIT_THREADS | LAPSE_CAP_HOST_TIMELINE;
        std::snprintf(info.name, sizeof info.name, "wallclock (%u stream%s on the caller's thread)", streams_,
                      streams_ == 1 ? "" : "s");
    }

    lapse_status sync(lapse_stream stream, lapse_error* error)
    {
        if (stream != LAPSE_ALL_STREAMS && stream >= streams_) return bad_stream("sync", stream, error);
        return LAPSE_OK;  // work ran inside submit: nothing is in flight
    }

    lapse_status submit(lapse_stream stream, lapse_work_fn fn, void* user, lapse_error* error)
    {
        if (stream >= streams_) return bad_stream("submit", stream, error);
        fn(user, nullptr);  // no native context on the host
        return LAPSE_OK;
    }

    lapse_status profile_start(lapse_stream stream, lapse_token& token, lapse_error* error)
    {
        if (stream >= streams_) return bad_stream("profile_start", stream, error);
        const uint64_t id = windows_.open(stream, 0);
        if (id == 0) return lapse::sdk::fail(error, LAPSE_ERROR_OUT_OF_MEMORY, "profile_start: no window records left");
        windows_.payload(id).start_ns.store(lapse::sdk::monotonic_ns(), std::memory_order_relaxed);
        token = lapse_token{id, stream, 0};
        return LAPSE_OK;
    }

    lapse_status profile_end(lapse_token token, uint32_t /*flags: nothing is batched*/, lapse_error* error)
    {
        const int64_t now = lapse::sdk::monotonic_ns();
        // One hold while the end stamp is written, so resolve cannot take
        // the window half-written.
        const lapse::sdk::WindowCheck check = windows_.close(token.id, token.opened_on, 1);
        if (check != lapse::sdk::WindowCheck::ok) return token_error("profile_end", token, check, error);
        windows_.payload(token.id).end_ns.store(now, std::memory_order_relaxed);
        windows_.release(token.id);
        return LAPSE_OK;
    }

    void profile_abandon(lapse_token token) noexcept { windows_.abandon(token.id, token.opened_on); }

    lapse_status resolve(const lapse_token* tokens, lapse_duration* out, uint32_t count, uint64_t /*timeout_ns*/,
                         lapse_error* error)
    {
        lapse_status first = LAPSE_OK;  // every duration is final at once: nothing runs asynchronously
        for (uint32_t i = 0; i < count; ++i) {
            int64_t start = 0, end = 0;
            const auto check = windows_.take(tokens[i].id, tokens[i].opened_on, [&](const Stamps& s) {
                start = s.start_ns.load(std::memory_order_relaxed);
                end = s.end_ns.load(std::memory_order_relaxed);
            });
            const uint32_t size = out[i].struct_size;
            out[i] = lapse_duration{};
            out[i].struct_size = size;
            if (check == lapse::sdk::WindowCheck::ok) {
                out[i].state = LAPSE_DURATION_READY;
                out[i].method = LAPSE_TIMING_DEVICE;
                out[i].clock_domain = LAPSE_CLOCK_HOST_MONOTONIC;
                out[i].start_ns = start;
                out[i].end_ns = end;
            } else {
                out[i].state = LAPSE_DURATION_FAILED;
                out[i].failure = first == LAPSE_OK ? token_error("resolve", tokens[i], check, error)
                                                   : token_error("resolve", tokens[i], check, nullptr);
                if (first == LAPSE_OK) first = out[i].failure;
            }
        }
        return first;
    }

private:
    static lapse_status bad_stream(const char* call, lapse_stream stream, lapse_error* error)
    {
        return lapse::sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT, "%s: stream %u does not exist", call, stream);
    }
    static lapse_status token_error(const char* call, lapse_token t, lapse::sdk::WindowCheck c, lapse_error* error)
    {
        const lapse_status s = c == lapse::sdk::WindowCheck::wrong_tag ? LAPSE_ERROR_WRONG_STREAM : LAPSE_ERROR_INVALID_TOKEN;
        return lapse::sdk::failf(error, s, "%s: token %" PRIu64 " (stream %u) %s", call, t.id, t.opened_on,
                                 c == lapse::sdk::WindowCheck::wrong_tag ? "was opened on another stream"
                                                                         : lapse::sdk::describe(c));
    }

    const uint32_t streams_;
    lapse::sdk::WindowTable<Stamps> windows_;
};

}  // namespace

LAPSE_PLUGIN_ENTRY
{
    // Refuse (and say why, through host->log) a host of another ABI major.
    if (!lapse::sdk::host_is_compatible(host, "wallclock")) return nullptr;
    static const lapse_plugin plugin = lapse::sdk::make_plugin<WallclockDevice>(
        "wallclock", "1.0.0", "work runs on the caller's thread; windows are CLOCK_MONOTONIC stamps around it",
        LAPSE_CAP_DEVICE_CLOCK | LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING | LAPSE_CAP_SPLIT_THREADS |
            LAPSE_CAP_HOST_TIMELINE);
    return &plugin;
}
