// The CUDA figure: a window's start+end through the C ABI on a CUDA stream
// against two bare cuEventRecord calls on the same stream, in the same run
// (cuda_window_vs_two_event_records, target <= 1.5x): what lapse adds to
// the two events a hand-written timer records.
//
// The device is the subject when the subject is the cuda plugin, or else a
// cuda device opened for this figure with the plugin's defaults (closed
// with the run's other devices: Context::cuda). The
// baseline calls the driver the way the plugin does: dlopen of the library
// its `driver` key names (default libcuda.so.1), then each entry point
// through cuGetProcAddress_v2 where the driver has it, dlsym otherwise. The
// driver's few types are declared here, so the suite builds without the
// CUDA toolkit. Where no driver or no GPU is here, the figure is
// unavailable with the plugin's own reason; the rest of the suite runs.
#include "internal.hpp"

#include <lapse/cuda.h>

#include <toml++/toml.h>

#include <dlfcn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lapse::bench::detail {

namespace {

// The driver's C ABI (cuda.h), as far as this figure uses it.
using CUresult = int;
using CUstream = CUstream_st*;
using CUcontext = CUctx_st*;
struct CUevent_st;
using CUevent = CUevent_st*;
constexpr CUresult cuda_success = 0;
constexpr int proc_address_found = 0;           // CU_GET_PROC_ADDRESS_SUCCESS
constexpr uint64_t proc_address_legacy_stream = 1;  // CU_GET_PROC_ADDRESS_LEGACY_STREAM, as the plugin asks

using InitFn = CUresult (*)(unsigned);
using DriverGetVersionFn = CUresult (*)(int*);
using GetProcAddressFn = CUresult (*)(const char*, void**, int, uint64_t, int*);
using EventCreateFn = CUresult (*)(CUevent*, unsigned);
using EventDestroyFn = CUresult (*)(CUevent);
using EventRecordFn = CUresult (*)(CUevent, CUstream);
using CtxPushFn = CUresult (*)(CUcontext);
using CtxPopFn = CUresult (*)(CUcontext*);
using StreamSyncFn = CUresult (*)(CUstream);

struct CudaDriver {
    EventCreateFn event_create = nullptr;
    EventDestroyFn event_destroy = nullptr;
    EventRecordFn event_record = nullptr;
    CtxPushFn ctx_push = nullptr;
    CtxPopFn ctx_pop = nullptr;
    StreamSyncFn stream_sync = nullptr;

    // Empty on success, else why not. The library stays loaded (as the
    // plugin keeps it: unloading libcuda under its threads is unsafe).
    std::string load(const std::string& path)
    {
        void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (lib == nullptr) {
            const char* why = dlerror();
            return "the CUDA driver '" + path + "' could not be loaded (" + (why ? why : "dlopen failed") + ")";
        }
        auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
        if (init == nullptr) return "'" + path + "' exports no cuInit";
        if (const CUresult r = init(0); r != cuda_success) return "cuInit failed with CUDA error " + std::to_string(r);
        int version = 0;
        if (auto v = reinterpret_cast<DriverGetVersionFn>(dlsym(lib, "cuDriverGetVersion")); v == nullptr || v(&version))
            version = 0;
        auto gpa = reinterpret_cast<GetProcAddressFn>(dlsym(lib, "cuGetProcAddress_v2"));
        auto find = [&](const char* base, int api, const char* exported) -> void* {
            void* fn = nullptr;
            int found = -1;
            if (gpa != nullptr && (version == 0 || api <= version) &&
                (gpa(base, &fn, api, proc_address_legacy_stream, &found) != cuda_success || found != proc_address_found))
                fn = nullptr;
            return fn != nullptr ? fn : dlsym(lib, exported);
        };
        event_create = reinterpret_cast<EventCreateFn>(find("cuEventCreate", 2000, "cuEventCreate"));
        event_destroy = reinterpret_cast<EventDestroyFn>(find("cuEventDestroy", 4000, "cuEventDestroy_v2"));
        event_record = reinterpret_cast<EventRecordFn>(find("cuEventRecord", 2000, "cuEventRecord"));
        ctx_push = reinterpret_cast<CtxPushFn>(find("cuCtxPushCurrent", 4000, "cuCtxPushCurrent_v2"));
        ctx_pop = reinterpret_cast<CtxPopFn>(find("cuCtxPopCurrent", 4000, "cuCtxPopCurrent_v2"));
        stream_sync = reinterpret_cast<StreamSyncFn>(find("cuStreamSynchronize", 2000, "cuStreamSynchronize"));
        if (!event_create || !event_destroy || !event_record || !ctx_push || !ctx_pop || !stream_sync)
            return "'" + path + "' lacks an entry point the baseline needs (cuEventCreate, cuEventRecord, ...)";
        return {};
    }
};

// What the figure's two benchmarks share, set up once per run.
struct CudaBench {
    const Device* dev = nullptr;  // the subject, or ctx.cuda
    CUstream stream = nullptr;   // the device's stream 0
    CUcontext context = nullptr;
    CudaDriver cu;
    std::string unavailable;     // why the figure cannot be measured here
    bool over_test_double = false;
};

// The `driver` key of a cuda config, as the plugin reads it.
std::string driver_of(const std::string& config_text)
{
    try {
        const toml::table t = toml::parse(config_text);
        return t["backend"]["driver"].value_or(std::string("libcuda.so.1"));
    } catch (const std::exception&) {
        return "libcuda.so.1";  // the subject opened from it, so it parses; never here
    }
}

void set_up(Context& ctx, CudaBench& b)
{
    std::string config = ctx.subject_config;
    if (ctx.plugin == "cuda") {
        b.dev = &ctx.subject;
    } else {
        config = "[backend]\nplugin = \"cuda\"\n";
        try {
            ctx.cuda = ctx.runtime->open(ctx.config(config));
        } catch (const std::exception& e) {
            b.unavailable = std::string("no CUDA device to measure: ") + e.what();
            return;
        }
        b.dev = &ctx.cuda;
    }
    const auto* ext = static_cast<const lapse_cuda_stream_ext*>(b.dev->extension(LAPSE_CUDA_STREAM_EXTENSION));
    if (ext == nullptr || ext->struct_size < sizeof(lapse_cuda_stream_ext)) {
        b.unavailable = "the cuda plugin offers no " LAPSE_CUDA_STREAM_EXTENSION " extension";
        return;
    }
    lapse_error e{};
    e.struct_size = sizeof e;
    if (ext->native_stream(b.dev->handle(), 0, &b.stream, &e) != LAPSE_OK ||
        ext->context(b.dev->handle(), &b.context, &e) != LAPSE_OK) {
        b.unavailable = std::string("the cuda device names no stream 0 or context: ") + e.message;
        return;
    }
    const std::string driver = driver_of(config);
    // The project's driver test double says so in its name: its
    // cuEventRecord is a table update, not a driver call.
    b.over_test_double = driver.find("fake_cuda") != std::string::npos;
    if (std::string why = b.cu.load(driver); !why.empty()) b.unavailable = why;
}

CudaBench& cuda_bench()
{
    static CudaBench b;
    return b;
}

void cuda_windows(benchmark::State& st, const CudaBench& b, uint32_t batch)
{
    std::vector<lapse_token> tokens(batch);
    std::vector<lapse_duration> out = duration_array(batch);
    std::string message;
    for (auto _ : st) {
        const auto t0 = Clock::now();
        const bool opened = open_close(*b.dev, 0, tokens.data(), batch, message);
        const auto t1 = Clock::now();
        if (!opened || !resolve_all(*b.dev, tokens.data(), out.data(), batch, message)) {
            st.SkipWithError(message.c_str());
            return;
        }
        st.SetIterationTime(seconds_between(t0, t1));
    }
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * batch);
}

void two_event_records(benchmark::State& st, const CudaBench& b, uint32_t batch)
{
    const CudaDriver& cu = b.cu;
    if (cu.ctx_push(b.context) != cuda_success) {
        st.SkipWithError("cuCtxPushCurrent failed");
        return;
    }
    CUevent e0 = nullptr, e1 = nullptr;
    if (cu.event_create(&e0, 0) != cuda_success || cu.event_create(&e1, 0) != cuda_success) {
        st.SkipWithError("cuEventCreate failed");
    } else {
        for (auto _ : st) {
            const auto t0 = Clock::now();
            bool ok = true;
            for (uint32_t i = 0; i < batch; ++i)
                ok &= cu.event_record(e0, b.stream) == cuda_success && cu.event_record(e1, b.stream) == cuda_success;
            const auto t1 = Clock::now();
            if (!ok || cu.stream_sync(b.stream) != cuda_success) {
                st.SkipWithError("cuEventRecord or cuStreamSynchronize failed");
                break;
            }
            st.SetIterationTime(seconds_between(t0, t1));
        }
        st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * batch);
    }
    if (e0 != nullptr) cu.event_destroy(e0);
    if (e1 != nullptr) cu.event_destroy(e1);
    CUcontext popped = nullptr;
    cu.ctx_pop(&popped);
}

}  // namespace

void add_cuda(Context& ctx, std::vector<FigureSpec>& figures)
{
    CudaBench& b = cuda_bench();
    b = CudaBench{};
    set_up(ctx, b);

    FigureSpec f;
    f.figure.key = "cuda_window_vs_two_event_records";
    f.figure.title = "cuda window start+end, C ABI, no resolve";
    f.figure.baseline = "2x cuEventRecord, same stream";
    f.figure.unit = "x";
    f.figure.target = b.over_test_double ? Target::report : Target::at_most;
    f.figure.limit = 1.5;
    if (b.over_test_double)
        f.figure.aim = "over the driver test double: reported, not held to 1.5x";
    f.subject = "cuda.window";
    f.baseline = "cuda.two_event_records|cuda.two_event_records_b";
    f.ops_per_iteration = ctx.batch;
    f.unavailable = b.unavailable;
    figures.push_back(f);
    if (!b.unavailable.empty()) return;

    const uint32_t batch = ctx.batch;
    auto manual = [&](benchmark::internal::Benchmark* bm) { bm->UseManualTime()->MinTime(ctx.min_time); };
    manual(add("cuda.two_event_records", [&b, batch](benchmark::State& st) { two_event_records(st, b, batch); }));
    manual(add("cuda.window", [&b, batch](benchmark::State& st) { cuda_windows(st, b, batch); }));
    manual(add("cuda.two_event_records_b", [&b, batch](benchmark::State& st) { two_event_records(st, b, batch); }));
}

}  // namespace lapse::bench::detail
