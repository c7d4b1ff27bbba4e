// The CPU plugin's worker: its thread CPU time per window. A fresh device
// (so its worker thread is the one that appears in /proc/self/task when it
// opens), 1,000,000 windows started and ended on stream 0 as fast as the
// caller can, then a sync; the worker's CLOCK_THREAD_CPUTIME before and
// after, divided by the windows. Whatever the worker spends on them counts:
// stamping, releasing, popping, and the spinning it does between markers
// when the caller is slower than it. Only for the cpu plugin (its workers
// are the threads named lapse-cpu-N).
#include "internal.hpp"

#include <dirent.h>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <set>
#include <string>
#include <sys/types.h>

namespace lapse::bench::detail {

namespace {

// Thread ids of this process whose name is `name`.
std::set<pid_t> threads_named(const char* name)
{
    std::set<pid_t> found;
    DIR* dir = opendir("/proc/self/task");
    if (dir == nullptr) return found;
    while (const dirent* e = readdir(dir)) {
        if (e->d_name[0] == '.') continue;
        const std::string comm_path = std::string("/proc/self/task/") + e->d_name + "/comm";
        if (FILE* f = std::fopen(comm_path.c_str(), "r")) {
            char comm[32] = {};
            if (std::fgets(comm, sizeof comm, f) != nullptr) {
                comm[std::strcspn(comm, "\n")] = '\0';
                if (std::strcmp(comm, name) == 0) found.insert(static_cast<pid_t>(std::atol(e->d_name)));
            }
            std::fclose(f);
        }
    }
    closedir(dir);
    return found;
}

// The CPU-time clock of another thread of this process, from its tid: the
// encoding pthread_getcpuclockid uses on Linux (per-thread, scheduler time).
clockid_t thread_cpu_clock(pid_t tid) { return static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6u); }

bool cpu_ns(clockid_t clock, int64_t& ns)
{
    timespec ts;
    if (clock_gettime(clock, &ts) != 0) return false;
    ns = static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
    return true;
}

void worker_cpu(benchmark::State& st, Context& ctx)
{
    const uint32_t n = static_cast<uint32_t>(ctx.big);
    double per_window = 0;
    std::string message;
    for (auto _ : st) {
        const std::set<pid_t> before = threads_named("lapse-cpu-0");
        Device dev;
        try {
            dev = ctx.runtime->open(ctx.config(ctx.subject_config));
        } catch (const std::exception& e) {
            st.SkipWithError(e.what());
            return;
        }
        pid_t worker = 0;
        for (const pid_t tid : threads_named("lapse-cpu-0"))
            if (before.count(tid) == 0) worker = tid;
        if (worker == 0) {
            st.SkipWithError("cannot find the new device's lapse-cpu-0 thread in /proc/self/task");
            return;
        }
        const clockid_t clock = thread_cpu_clock(worker);
        const lapse_plugin& p = dev.plugin();
        lapse_device* h = dev.handle();
        p.sync(h, LAPSE_ALL_STREAMS, nullptr);
        int64_t cpu0 = 0, cpu1 = 0;
        const bool read0 = cpu_ns(clock, cpu0);
        const auto t0 = Clock::now();
        const bool ok = open_close(dev, 0, ctx.big_tokens.data(), n, message);
        p.sync(h, 0, nullptr);
        const auto t1 = Clock::now();
        const bool read1 = cpu_ns(clock, cpu1);
        const bool resolved = ok && resolve_all(dev, ctx.big_tokens.data(), ctx.big_out.data(), n, message);
        dev.close();
        if (!read0 || !read1) {
            st.SkipWithError("cannot read the worker's CPU-time clock");
            return;
        }
        if (!ok || !resolved) {
            st.SkipWithError(message.c_str());
            return;
        }
        st.SetIterationTime(seconds_between(t0, t1));
        per_window = static_cast<double>(cpu1 - cpu0) / static_cast<double>(n);
    }
    st.counters["worker_ns_per_window"] = per_window;
}

}  // namespace

void add_worker(Context& ctx, std::vector<FigureSpec>& figures)
{
    const bool cpu = ctx.plugin == "cpu";
    if (cpu)
        add("worker.cpu_time", [&ctx](benchmark::State& st) { worker_cpu(st, ctx); })->UseManualTime()->Iterations(1);

    FigureSpec f;
    f.figure.key = "cpu_worker_ns_per_window";
    f.figure.title = "the stream worker's thread CPU time per window (" + std::to_string(ctx.big) + " windows)";
    f.figure.unit = "ns";
    f.figure.target = Target::at_most;
    f.figure.limit = 15;
    f.formula = Formula::counter;
    f.counter = "worker_ns_per_window";
    f.subject = "worker.cpu_time";
    if (!cpu) f.unavailable = "only the cpu plugin has worker threads";
    if (!ctx.big_error.empty()) f.unavailable = ctx.big_error;
    figures.push_back(f);
}

}  // namespace lapse::bench::detail
