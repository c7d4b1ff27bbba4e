// The CUDA plugin on a real NVIDIA GPU: window rules, a kernel of known
// length timed by a window against the host's own measurement, nested
// windows on two streams, a host-owned stream, error poisoning by a real
// device fault, and the cuEventRecord baseline benchmark.
//
// Exit codes: 0 all passed, 1 a check failed, 77 no usable GPU/driver (the
// reason is printed; ctest reports SKIP). Plain output, one line per check,
// so scripts/gpu-check.sh can show it as is.
//
// Needs nothing but the SDK headers, cuda.h and the driver at run time: no
// Catch2, no nvcc (the kernels are PTX text, JIT-compiled by the driver), so
// it builds on a bare GPU machine.
#include <lapse/cuda.h>
#include <lapse_test/test_host.hpp>

#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using lapse::test::ConfigTable;
using lapse::test::LoadedPlugin;

namespace {

constexpr int64_t kUs = 1000;
constexpr int64_t kMs = 1000000;

// lapse_spin(ns): spins until %globaltimer moved `ns`. lapse_fault(): stores
// through a null pointer. PTX 6.0 for sm_50 and later: the driver JITs it
// for whatever GPU is present.
const char* const kPtx = R"(
.version 6.0
.target sm_50
.address_size 64
.visible .entry lapse_spin(.param .u64 ns)
{
    .reg .u64 %rd<5>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [ns];
    mov.u64 %rd2, %globaltimer;
LOOP:
    mov.u64 %rd3, %globaltimer;
    sub.u64 %rd4, %rd3, %rd2;
    setp.lt.u64 %p1, %rd4, %rd1;
    @%p1 bra LOOP;
    ret;
}
.visible .entry lapse_fault()
{
    .reg .u64 %rd<2>;
    .reg .u32 %r<2>;
    mov.u64 %rd1, 0;
    mov.u32 %r1, 1;
    st.global.u32 [%rd1], %r1;
    ret;
}
)";

int failures = 0;

void check(bool ok, const char* what, const std::string& detail = "")
{
    std::printf("  [%s] %s%s%s\n", ok ? "PASS" : "FAIL", what, detail.empty() ? "" : " — ", detail.c_str());
    if (!ok) ++failures;
}

int64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

std::string ms(int64_t ns)
{
    char b[32];
    std::snprintf(b, sizeof b, "%.3f ms", static_cast<double>(ns) / 1e6);
    return b;
}

// The driver calls the test makes itself, as a host launching its own work.
struct Cu {
    PFN_cuCtxPushCurrent_v4000 push = nullptr;
    PFN_cuCtxPopCurrent_v4000 pop = nullptr;
    PFN_cuModuleLoadData_v2000 load = nullptr;
    PFN_cuModuleUnload_v2000 unload = nullptr;
    PFN_cuModuleGetFunction_v2000 function = nullptr;
    PFN_cuLaunchKernel_v4000 launch = nullptr;
    PFN_cuStreamCreate_v2000 stream_create = nullptr;
    PFN_cuStreamDestroy_v4000 stream_destroy = nullptr;
    PFN_cuStreamSynchronize_v2000 stream_sync = nullptr;
    PFN_cuEventCreate_v2000 event_create = nullptr;
    PFN_cuEventDestroy_v4000 event_destroy = nullptr;
    PFN_cuEventRecord_v2000 event_record = nullptr;

    bool load_from(const char* path)
    {
        void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (lib == nullptr) return false;
        auto sym = [lib](const char* n) { return dlsym(lib, n); };
        push = reinterpret_cast<PFN_cuCtxPushCurrent_v4000>(sym("cuCtxPushCurrent_v2"));
        pop = reinterpret_cast<PFN_cuCtxPopCurrent_v4000>(sym("cuCtxPopCurrent_v2"));
        load = reinterpret_cast<PFN_cuModuleLoadData_v2000>(sym("cuModuleLoadData"));
        unload = reinterpret_cast<PFN_cuModuleUnload_v2000>(sym("cuModuleUnload"));
        function = reinterpret_cast<PFN_cuModuleGetFunction_v2000>(sym("cuModuleGetFunction"));
        launch = reinterpret_cast<PFN_cuLaunchKernel_v4000>(sym("cuLaunchKernel"));
        stream_create = reinterpret_cast<PFN_cuStreamCreate_v2000>(sym("cuStreamCreate"));
        stream_destroy = reinterpret_cast<PFN_cuStreamDestroy_v4000>(sym("cuStreamDestroy_v2"));
        stream_sync = reinterpret_cast<PFN_cuStreamSynchronize_v2000>(sym("cuStreamSynchronize"));
        event_create = reinterpret_cast<PFN_cuEventCreate_v2000>(sym("cuEventCreate"));
        event_destroy = reinterpret_cast<PFN_cuEventDestroy_v4000>(sym("cuEventDestroy_v2"));
        event_record = reinterpret_cast<PFN_cuEventRecord_v2000>(sym("cuEventRecord"));
        return push && pop && load && unload && function && launch && stream_create && stream_destroy &&
               stream_sync && event_create && event_destroy && event_record;
    }
};

struct Gpu {
    LoadedPlugin& loaded;
    const lapse_plugin& p;
    lapse_device* device;
    const lapse_cuda_stream_ext* ext;
    Cu cu;
    CUcontext ctx = nullptr;
    CUfunction spin = nullptr;
    CUfunction fault = nullptr;

    CUstream stream(lapse_stream s)
    {
        CUstream out = nullptr;
        ext->native_stream(device, s, &out, nullptr);
        return out;
    }

    bool launch_spin(CUstream s, int64_t ns)
    {
        uint64_t arg = static_cast<uint64_t>(ns);
        void* params[] = {&arg};
        return cu.launch(spin, 1, 1, 1, 1, 1, 1, 0, s, params, nullptr) == CUDA_SUCCESS;
    }

    // Launches through submit, as a host's work goes to a lapse stream.
    bool submit_spin(lapse_stream s, int64_t ns)
    {
        struct Work {
            Gpu* gpu;
            int64_t ns;
            bool ok;
        } w{this, ns, false};
        lapse_status st = p.submit(
            device, s,
            [](void* user, void* native) {
                auto* work = static_cast<Work*>(user);
                work->ok = work->gpu->launch_spin(static_cast<CUstream>(native), work->ns);
            },
            &w, nullptr);
        return st == LAPSE_OK && w.ok;
    }

    lapse_token start(lapse_stream s)
    {
        lapse_token t{};
        lapse_error e{};
        e.struct_size = sizeof e;
        if (p.profile_start(device, s, &t, &e) != LAPSE_OK) {
            check(false, "profile_start", e.message);
            t.id = 0;
        }
        return t;
    }
    lapse_status end(lapse_token t) { return p.profile_end(device, t, nullptr, nullptr); }
    lapse_duration resolve(lapse_token t, uint64_t timeout = LAPSE_WAIT_FOREVER, lapse_status* st = nullptr)
    {
        lapse_duration d{};
        d.struct_size = sizeof d;
        lapse_status s = p.resolve(device, &t, &d, 1, timeout, nullptr);
        if (st != nullptr) *st = s;
        return d;
    }
};

int64_t len(const lapse_duration& d) { return d.end_ns - d.start_ns; }

void test_known_work(Gpu& g)
{
    std::printf("a kernel of known length, timed by a window and by the host\n");
    // Warm up: the first launch pays for JIT and module loading.
    g.submit_spin(0, 100 * kUs);
    g.p.sync(g.device, 0, nullptr);
    for (int64_t target : {1 * kMs, 10 * kMs, 50 * kMs}) {
        g.p.sync(g.device, 0, nullptr);
        int64_t t0 = now_ns();
        lapse_token t = g.start(0);
        bool launched = g.submit_spin(0, target);
        g.end(t);
        g.p.sync(g.device, 0, nullptr);
        int64_t t1 = now_ns();
        lapse_duration d = g.resolve(t);
        char what[96];
        std::snprintf(what, sizeof what, "%s kernel: window reads the kernel (>= target, <= target + 0.5 ms)",
                      ms(target).c_str());
        check(launched && d.state == LAPSE_DURATION_READY && len(d) >= target - 2 * kUs &&
                  len(d) <= target + 500 * kUs,
              what, "window " + ms(len(d)) + ", host (sync to sync) " + ms(t1 - t0));
        check(d.state == LAPSE_DURATION_READY && len(d) <= (t1 - t0) + 50 * kUs,
              "  the window fits inside the host's measurement of the same work");
        check(d.clock_domain == LAPSE_CLOCK_HOST_MONOTONIC && d.start_ns >= t0 - 200 * kUs &&
                  d.end_ns <= t1 + 200 * kUs,
              "  placed on the host clock inside the host's interval (±0.2 ms)",
              "start " + ms(d.start_ns - t0) + " after t0, end " + ms(t1 - d.end_ns) + " before t1");
    }
}

void test_window_rules(Gpu& g)
{
    std::printf("window rules on the real driver\n");
    // Nested and overlapping on one stream.
    lapse_token outer = g.start(0);
    g.submit_spin(0, 2 * kMs);
    lapse_token inner = g.start(0);
    g.submit_spin(0, 3 * kMs);
    lapse_token overlap = g.start(0);
    g.end(inner);
    g.submit_spin(0, 2 * kMs);
    g.end(outer);
    g.submit_spin(0, 1 * kMs);
    g.end(overlap);
    lapse_duration o = g.resolve(outer), i = g.resolve(inner), v = g.resolve(overlap);
    check(len(o) >= 7 * kMs - 5 * kUs && len(i) >= 3 * kMs - 5 * kUs && len(i) < len(o) &&
              i.start_ns >= o.start_ns && i.end_ns <= o.end_ns,
          "nested windows", "outer " + ms(len(o)) + ", inner " + ms(len(i)));
    check(v.start_ns > i.start_ns && v.start_ns < o.end_ns && v.end_ns > o.end_ns && len(v) >= 3 * kMs - 5 * kUs,
          "overlapping windows", "overlap " + ms(len(v)));

    // Closing does not wait; resolve polls, then waits.
    lapse_token t = g.start(0);
    g.submit_spin(0, 100 * kMs);
    int64_t before = now_ns();
    g.end(t);
    int64_t end_cost = now_ns() - before;
    lapse_status st = LAPSE_OK;
    lapse_duration d = g.resolve(t, 0, &st);
    check(st == LAPSE_NOT_READY && d.state == LAPSE_DURATION_PENDING && end_cost < 10 * kMs,
          "end returns at once; resolve(0) says NOT_READY while the kernel runs", "end took " + ms(end_cost));
    d = g.resolve(t, 5 * kMs, &st);
    check(st == LAPSE_NOT_READY, "resolve with a 5 ms timeout gives up on a 100 ms kernel");
    d = g.resolve(t);
    check(d.state == LAPSE_DURATION_READY && len(d) >= 100 * kMs - 5 * kUs, "resolve waiting forever reads it",
          ms(len(d)));

    // opened_on and invalid tokens.
    lapse_token w = g.start(0);
    lapse_token forged = w;
    forged.opened_on = 1;
    check(g.p.profile_end(g.device, forged, nullptr, nullptr) == LAPSE_ERROR_WRONG_STREAM,
          "a token naming another stream is refused");
    check(g.end(w) == LAPSE_OK && g.end(w) == LAPSE_ERROR_INVALID_TOKEN, "closing twice is refused");
    check(g.resolve(w).state == LAPSE_DURATION_READY && g.resolve(w).state == LAPSE_DURATION_FAILED,
          "resolving twice is refused");
    lapse_token a = g.start(0);
    g.submit_spin(0, 1 * kMs);
    g.p.profile_abandon(g.device, a);
    check(g.end(a) == LAPSE_ERROR_INVALID_TOKEN, "an abandoned window is forgotten");
}

void test_two_streams(Gpu& g)
{
    std::printf("nested windows on two streams at once\n");
    g.p.sync(g.device, LAPSE_ALL_STREAMS, nullptr);
    int64_t t0 = now_ns();
    lapse_token o0 = g.start(0);
    lapse_token o1 = g.start(1);
    g.submit_spin(0, 5 * kMs);
    lapse_token i0 = g.start(0);
    g.submit_spin(0, 5 * kMs);
    g.end(i0);
    g.submit_spin(1, 20 * kMs);
    lapse_token i1 = g.start(1);
    g.submit_spin(1, 4 * kMs);
    g.end(i1);
    g.end(o0);
    g.end(o1);
    g.p.sync(g.device, LAPSE_ALL_STREAMS, nullptr);
    int64_t t1 = now_ns();
    lapse_duration ro0 = g.resolve(o0), ri0 = g.resolve(i0), ro1 = g.resolve(o1), ri1 = g.resolve(i1);
    check(len(ro0) >= 10 * kMs - 5 * kUs && len(ro0) < 12 * kMs && len(ri0) >= 5 * kMs - 5 * kUs &&
              len(ri0) < 6 * kMs,
          "stream 0: outer ~10 ms, inner ~5 ms", ms(len(ro0)) + ", " + ms(len(ri0)));
    check(len(ro1) >= 24 * kMs - 5 * kUs && len(ro1) < 27 * kMs && len(ri1) >= 4 * kMs - 5 * kUs &&
              len(ri1) < 5 * kMs,
          "stream 1: outer ~24 ms, inner ~4 ms (the streams ran side by side)", ms(len(ro1)) + ", " + ms(len(ri1)));
    // Side by side: on the host clock, stream 0's outer window lies within
    // stream 1's (both opened at once; stream 1 has more work).
    int64_t overlap = std::min(ro0.end_ns, ro1.end_ns) - std::max(ro0.start_ns, ro1.start_ns);
    check(overlap >= len(ro0) * 8 / 10, "the two streams ran side by side (their windows overlap on the host clock)",
          "overlap " + ms(overlap) + ", host interval " + ms(t1 - t0));
}

void test_registered_stream(Gpu& g)
{
    std::printf("a stream the host owns (lapse.cuda.stream/1)\n");
    CUstream mine = nullptr;
    g.cu.stream_create(&mine, CU_STREAM_NON_BLOCKING);
    lapse_stream index = 0;
    lapse_error e{};
    e.struct_size = sizeof e;
    bool ok = g.ext->register_stream(g.device, mine, &index, &e) == LAPSE_OK;
    check(ok, "register_stream", e.message);
    if (!ok) return;
    lapse_token t = g.start(index);
    g.launch_spin(mine, 3 * kMs);  // launched by the host itself, not through submit
    g.end(t);
    lapse_duration d = g.resolve(t);
    check(d.state == LAPSE_DURATION_READY && len(d) >= 3 * kMs - 5 * kUs && len(d) < 4 * kMs,
          "a window brackets the host's own launch", ms(len(d)));
    check(g.ext->unregister_stream(g.device, index, nullptr) == LAPSE_OK, "unregister_stream");
    g.cu.stream_sync(mine);
    g.cu.stream_destroy(mine);
}

void benchmark(Gpu& g)
{
    std::printf("benchmark: host-side start+end vs two bare cuEventRecord (same stream, same run)\n");
    CUstream s = g.stream(0);
    CUevent e0 = nullptr, e1 = nullptr;
    g.cu.event_create(&e0, CU_EVENT_DEFAULT);
    g.cu.event_create(&e1, CU_EVENT_DEFAULT);
    constexpr int kBatch = 256, kRounds = 40;
    std::vector<lapse_token> tokens(kBatch);
    std::vector<lapse_duration> out(kBatch);
    std::vector<double> window_ns, bare_ns;
    for (int round = 0; round < kRounds + 2; ++round) {  // two warm-up rounds
        int64_t a = now_ns();
        for (int i = 0; i < kBatch; ++i) {
            g.p.profile_start(g.device, 0, &tokens[i], nullptr);
            g.p.profile_end(g.device, tokens[i], nullptr, nullptr);
        }
        int64_t b = now_ns();
        for (int i = 0; i < kBatch; ++i) {
            g.cu.event_record(e0, s);
            g.cu.event_record(e1, s);
        }
        int64_t c = now_ns();
        for (auto& d : out) d.struct_size = sizeof d;
        g.p.resolve(g.device, tokens.data(), out.data(), kBatch, LAPSE_WAIT_FOREVER, nullptr);
        g.cu.stream_sync(s);
        if (round >= 2) {
            window_ns.push_back(static_cast<double>(b - a) / kBatch);
            bare_ns.push_back(static_cast<double>(c - b) / kBatch);
        }
    }
    std::sort(window_ns.begin(), window_ns.end());
    std::sort(bare_ns.begin(), bare_ns.end());
    double w = window_ns[window_ns.size() / 2], b = bare_ns[bare_ns.size() / 2];
    std::printf("  window start+end: median %.0f ns; two bare cuEventRecord: median %.0f ns; ratio %.2fx "
                "(target <= 1.5x: %s)\n",
                w, b, w / b, w / b <= 1.5 ? "met" : "NOT met");
    g.cu.event_destroy(e0);
    g.cu.event_destroy(e1);
}

// Last: a real device fault poisons the context for good.
void test_fault_poisons(Gpu& g)
{
    std::printf("a device fault inside a window (last: it ends the context)\n");
    lapse_token t = g.start(0);
    struct Work {
        Gpu* g;
        bool ok;
    } w{&g, false};
    g.p.submit(
        g.device, 0,
        [](void* user, void* native) {
            auto* work = static_cast<Work*>(user);
            work->ok = work->g->cu.launch(work->g->fault, 1, 1, 1, 1, 1, 1, 0, static_cast<CUstream>(native),
                                          nullptr, nullptr) == CUDA_SUCCESS;
        },
        &w, nullptr);
    g.end(t);
    lapse_error e{};
    e.struct_size = sizeof e;
    lapse_status s = g.p.sync(g.device, 0, &e);
    check(s == LAPSE_ERROR_DEVICE, "sync reports the fault", e.message);
    lapse_duration d = g.resolve(t);
    check(d.state == LAPSE_DURATION_FAILED, "the window around the fault reads FAILED, not a duration");
}

}  // namespace

int main()
{
    const char* driver = std::getenv("LAPSE_CUDA_DRIVER");
    if (driver == nullptr || *driver == '\0') driver = "libcuda.so.1";
    LoadedPlugin loaded(LAPSE_CUDA_PLUGIN_PATH);
    if (loaded.plugin() == nullptr) {
        std::printf("FAIL: the plugin refused to load\n");
        return 1;
    }
    lapse_device* device = nullptr;
    lapse_status s = loaded.open({{"driver", std::string(driver)}, {"streams", int64_t{2}}}, &device);
    if (s == LAPSE_ERROR_UNAVAILABLE) {
        std::printf("SKIP: no NVIDIA GPU/driver found: %s\n", loaded.last_error().message);
        return 77;
    }
    if (s != LAPSE_OK) {
        std::printf("FAIL: opening the CUDA device: %s: %s\n", lapse_status_name(s), loaded.last_error().message);
        return 1;
    }
    lapse_device_info info{};
    info.struct_size = sizeof info;
    loaded.plugin()->describe(device, &info, nullptr);
    std::printf("device: %s, %u streams\n", info.name, info.stream_count);

    Gpu g{loaded, *loaded.plugin(), device,
          static_cast<const lapse_cuda_stream_ext*>(loaded.plugin()->get_extension(device, LAPSE_CUDA_STREAM_EXTENSION)),
          Cu{}};
    check(g.ext != nullptr, "the lapse.cuda.stream/1 extension is offered");
    if (g.ext == nullptr || !g.cu.load_from(driver)) {
        check(false, "the test's own driver entry points (cuModuleLoadData, cuLaunchKernel, ...)");
        loaded.plugin()->close(device);
        return 1;
    }
    g.ext->context(device, reinterpret_cast<CUctx_st**>(&g.ctx), nullptr);
    g.cu.push(g.ctx);
    CUmodule module = nullptr;
    CUresult r = g.cu.load(&module, kPtx);
    if (r == CUDA_SUCCESS) r = g.cu.function(&g.spin, module, "lapse_spin");
    if (r == CUDA_SUCCESS) r = g.cu.function(&g.fault, module, "lapse_fault");
    check(r == CUDA_SUCCESS, "the PTX spin kernel loads (cuModuleLoadData JIT)", "CUresult " + std::to_string(r));
    if (r == CUDA_SUCCESS) {
        test_known_work(g);
        test_window_rules(g);
        test_two_streams(g);
        test_registered_stream(g);
        benchmark(g);
        test_fault_poisons(g);
    }
    CUcontext popped = nullptr;
    g.cu.pop(&popped);  // before close: close releases the context we pushed
    loaded.plugin()->close(device);
    std::printf("%s: %d check(s) failed\n", failures == 0 ? "PASS" : "FAIL", failures);
    return failures == 0 ? 0 : 1;
}
