// Window start+end through the C host API (lapse/host_api.h) against the
// C++ API in the same run: what a C, Rust or Python-over-cffi host pays for
// crossing the C layer. The C host opens its own device from the subject's
// config (the C API hands out opaque handles only), so both run on the same
// backend, configured alike. Same batches as the window concern: timed
// start+end, then an untimed resolve.
#include "internal.hpp"

#include <lapse/host_api.h>

#include <memory>

namespace lapse::bench::detail {

namespace {

// The C host's handles, alive while its benchmarks are registered.
struct CHost {
    lapse_host_runtime* runtime = nullptr;
    lapse_host_config* config = nullptr;
    lapse_host_device* device = nullptr;
    std::string error;  // why it did not open

    CHost(const Context& ctx)
    {
        lapse_error e{sizeof(lapse_error), 0, {}};
        if (lapse_host_runtime_create(nullptr, &runtime, &e) != LAPSE_OK ||
            lapse_host_config_from_string(ctx.subject_config.c_str(), ctx.config_name.c_str(),
                                          ctx.config_dir.empty() ? nullptr : ctx.config_dir.c_str(), &config,
                                          &e) != LAPSE_OK ||
            lapse_host_open(runtime, config, &device, &e) != LAPSE_OK)
            error = e.message;
    }
    CHost(const CHost&) = delete;
    CHost& operator=(const CHost&) = delete;
    ~CHost()
    {
        lapse_host_device_destroy(device);
        lapse_host_config_destroy(config);
        lapse_host_runtime_destroy(runtime);
    }
};

void c_host_windows(benchmark::State& st, const CHost& host, uint32_t batch)
{
    if (host.device == nullptr) {
        st.SkipWithError(("C host device not open: " + host.error).c_str());
        return;
    }
    lapse_host_device* dev = host.device;
    std::vector<lapse_host_duration> durations(batch);
    for (auto& d : durations) lapse_host_duration_init(&d);
    for (auto _ : st) {
        const auto t0 = Clock::now();
        for (uint32_t i = 0; i < batch; ++i) {
            lapse_host_window w;
            if (lapse_host_profile_start(dev, 0, nullptr, &w, nullptr) != LAPSE_OK ||
                lapse_host_profile_end(dev, &w, 0, &durations[i], nullptr) != LAPSE_OK) [[unlikely]] {
                st.SkipWithError("lapse_host_profile_start/end failed");
                return;
            }
        }
        const auto t1 = Clock::now();
        st.SetIterationTime(seconds_between(t0, t1));
        if (lapse_host_resolve(dev, durations.data(), batch, LAPSE_WAIT_FOREVER, nullptr, nullptr) != LAPSE_OK) {
            st.SkipWithError("lapse_host_resolve failed");
            return;
        }
    }
    for (auto& d : durations) lapse_host_duration_release(&d);
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * batch);
}

// The C++ API's loop, exactly as the window concern runs it.
void cpp_windows(benchmark::State& st, Device& dev, uint32_t batch)
{
    if (!dev) {
        st.SkipWithError("device not open");
        return;
    }
    std::vector<Duration> durations(batch);
    for (auto _ : st) {
        const auto t0 = Clock::now();
        for (uint32_t i = 0; i < batch; ++i) {
            Window w = dev.profile_start(0);
            durations[i] = dev.profile_end(w);
            if (durations[i].failed()) [[unlikely]] {
                st.SkipWithError("profile_end failed");
                return;
            }
        }
        const auto t1 = Clock::now();
        st.SetIterationTime(seconds_between(t0, t1));
        dev.resolve(durations);
    }
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * batch);
}

}  // namespace

void add_c_host(Context& ctx, std::vector<FigureSpec>& figures)
{
    auto host = std::make_shared<CHost>(ctx);
    const double mt = ctx.min_time;
    auto manual = [&](benchmark::internal::Benchmark* b) { b->UseManualTime()->MinTime(mt); };
    manual(add("c_host.cpp_api", [&ctx](benchmark::State& st) { cpp_windows(st, ctx.subject, ctx.batch); }));
    manual(add("c_host.c_host", [&ctx, host](benchmark::State& st) { c_host_windows(st, *host, ctx.batch); }));
    manual(add("c_host.cpp_api_b", [&ctx](benchmark::State& st) { cpp_windows(st, ctx.subject, ctx.batch); }));

    FigureSpec f;
    f.figure.key = "c_host_vs_cpp_api";
    f.figure.title = "window start+end, C host API (lapse/host_api.h)";
    f.figure.baseline = "the same through the C++ API";
    f.figure.unit = "x";
    f.figure.target = Target::at_most;
    f.figure.limit = 1.1;
    f.subject = "c_host.c_host";
    f.baseline = "c_host.cpp_api|c_host.cpp_api_b";  // either side of it: the same load
    f.ops_per_iteration = ctx.batch;
    if (host->device == nullptr) f.unavailable = "the C host could not open the subject: " + host->error;
    figures.push_back(f);
}

}  // namespace lapse::bench::detail
