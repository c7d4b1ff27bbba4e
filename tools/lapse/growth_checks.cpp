// Growth checks: a caller built against a later minor passes structs longer
// than the plugin's (fields appended at the end). The plugin must accept
// them, write only the fields it knows, and stride resolve's array by the
// caller's out[0].struct_size, not by its own sizeof(lapse_duration).
#include "checks.hpp"

#include <lapse/core.hpp>
#include <lapse/lapse.h>

#include <cstring>
#include <string>
#include <vector>

namespace lapse::cli {
namespace {

constexpr uint64_t appended_sentinel = 0x5eed5eed5eed5eedull;
constexpr std::size_t appended_bytes = sizeof(uint64_t);

lapse_error error_struct()
{
    lapse_error e{};
    e.struct_size = sizeof e;
    return e;
}

void check_longer_structs(const CheckContext& ctx, std::string& note)
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

    // describe into a lapse_device_info with a field appended.
    struct {
        lapse_device_info info;
        uint64_t appended;
    } longer_info{};
    longer_info.info.struct_size = static_cast<uint32_t>(sizeof(lapse_device_info) + appended_bytes);
    longer_info.appended = appended_sentinel;
    lapse_error err = error_struct();
    lapse_status s = p.describe(h, &longer_info.info, &err);
    require(s == LAPSE_OK, std::string("describe with a longer lapse_device_info = ") + lapse_status_name(s) + ": " +
                               err.message + " (a later minor's struct must be accepted)");
    require(longer_info.appended == appended_sentinel, "describe wrote past the fields of lapse_device_info it knows");
    require(longer_info.info.struct_size == sizeof(lapse_device_info) + appended_bytes,
            "describe changed the caller's struct_size");

    // resolve into durations a field longer, so the stride is the caller's.
    constexpr uint32_t n = 40;
    std::vector<lapse_token> tokens(n);
    for (uint32_t i = 0; i < n; ++i) {
        err = error_struct();
        s = p.profile_start(h, 0, &tokens[i], &err);
        if (s == LAPSE_NO_WINDOW) {
            note = "describe accepts a longer struct; stream 0 opens no windows, so resolve's stride is not tested";
            return;
        }
        require(s == LAPSE_OK, std::string("profile_start = ") + lapse_status_name(s) + ": " + err.message);
        err = error_struct();
        s = p.profile_end(h, tokens[i], nullptr, &err);
        require(s == LAPSE_OK, std::string("profile_end = ") + lapse_status_name(s) + ": " + err.message);
    }
    const std::size_t stride = sizeof(lapse_duration) + appended_bytes;
    std::vector<unsigned char> bytes(n * stride + appended_bytes, 0);
    auto at = [&](uint32_t i) { return reinterpret_cast<lapse_duration*>(bytes.data() + i * stride); };
    auto appended = [&](uint32_t i) {
        uint64_t v;
        std::memcpy(&v, bytes.data() + i * stride + sizeof(lapse_duration), sizeof v);
        return v;
    };
    for (uint32_t i = 0; i <= n; ++i) {
        if (i < n) at(i)->struct_size = static_cast<uint32_t>(stride);
        std::memcpy(bytes.data() + (i < n ? i * stride + sizeof(lapse_duration) : n * stride), &appended_sentinel,
                    sizeof appended_sentinel);
    }
    err = error_struct();
    s = p.resolve(h, tokens.data(), at(0), n, LAPSE_WAIT_FOREVER, &err);
    require(s == LAPSE_OK, std::string("resolve into longer durations = ") + lapse_status_name(s) + ": " +
                               err.message + " (a later minor's stride must be accepted)");
    for (uint32_t i = 0; i < n; ++i) {
        const lapse_duration& d = *at(i);
        const std::string which = "duration " + std::to_string(i) + " of " + std::to_string(n);
        require(d.struct_size == stride, which + ": struct_size changed (the plugin strides by its own size?)");
        require(d.state == LAPSE_DURATION_READY || d.state == LAPSE_DURATION_NOT_MEASURED,
                which + ": state " + std::to_string(d.state) + " (the plugin strides by its own size?)");
        if (d.state == LAPSE_DURATION_READY) require(d.end_ns >= d.start_ns, which + ": negative");
        require(appended(i) == appended_sentinel, which + ": the appended field was written");
    }
    uint64_t tail;
    std::memcpy(&tail, bytes.data() + n * stride, sizeof tail);
    require(tail == appended_sentinel, "resolve wrote past the caller's array");
    note = "describe and resolve serve structs " + std::to_string(appended_bytes) + " bytes longer, at the caller's stride";
}

}  // namespace

void append_growth_checks(std::vector<Check>& out)
{
    out.push_back({"abi.longer_structs",
                   "a caller of a later minor (lapse_device_info and lapse_duration a field longer) is served at its "
                   "sizes and its stride",
                   &check_longer_structs});
}

}  // namespace lapse::cli
