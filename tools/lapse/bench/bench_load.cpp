// Plugin load + ABI negotiation + open of a one-stream CPU device, from
// nothing: a new Runtime, the config parsed, the file loaded, the entry
// called, the descriptor checked, the device opened (its worker started).
//
// A file already loaded in the process would be found, not loaded (the
// other benchmarks keep CPU devices open), so every iteration loads a fresh
// copy of lapse_cpu.so from a private folder: the file is in the page cache
// (as on any second run of a program) but has never been mapped by this
// process. Closing the device and the runtime is not timed.
#include "internal.hpp"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace lapse::bench::detail {

namespace {

namespace fs = std::filesystem;

struct Copies {
    fs::path dir;
    fs::path source;
    int next = 0;
    std::string error;

    Copies(Context& ctx)
    {
        try {
            source = ctx.runtime->find_plugin("cpu");
            std::string tmpl = (fs::temp_directory_path() / "lapse-bench-XXXXXX").string();
            if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
            dir = tmpl;
        } catch (const std::exception& e) {
            error = e.what();
        }
    }
    ~Copies()
    {
        std::error_code ec;
        if (!dir.empty()) fs::remove_all(dir, ec);
    }
    fs::path fresh()
    {
        fs::path p = dir / ("lapse_cpu_copy" + std::to_string(next++) + ".so");
        fs::copy_file(source, p, fs::copy_options::overwrite_existing);
        fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write | fs::perms::owner_exec);
        return p;
    }
};

void load_open(benchmark::State& st, Copies& copies)
{
    if (!copies.error.empty()) {
        st.SkipWithError(copies.error.c_str());
        return;
    }
    for (auto _ : st) {
        const fs::path file = copies.fresh();
        const std::string text = "[backend]\nplugin = \"" + file.string() + "\"\nmode = \"stream\"\nstreams = 1\n";
        const auto t0 = Clock::now();
        try {
            auto runtime = std::make_unique<Runtime>();
            Device dev = runtime->open(Config::from_string(text, "<bench load>", copies.dir));
            const auto t1 = Clock::now();
            st.SetIterationTime(seconds_between(t0, t1));
            dev.close();
        } catch (const std::exception& e) {
            st.SkipWithError(e.what());
            return;
        }
        std::error_code ec;
        fs::remove(file, ec);  // a mapped file stays valid after unlink
    }
}

}  // namespace

void add_load(Context& ctx, std::vector<FigureSpec>& figures)
{
    static std::unique_ptr<Copies> copies;
    copies = std::make_unique<Copies>(ctx);
    add("load.open_cpu_1_stream", [](benchmark::State& st) { load_open(st, *copies); })
        ->UseManualTime()
        ->Iterations(ctx.load_iterations)
        ->Unit(benchmark::kMillisecond);

    FigureSpec f;
    f.figure.key = "load_open_ms";
    f.figure.title = "load + negotiate + open a 1-stream cpu device";
    f.figure.unit = "ms";
    f.figure.target = Target::at_most;
    f.figure.limit = 5.0;
    f.formula = Formula::time_ms;
    f.subject = "load.open_cpu_1_stream";
    if (!copies->error.empty()) f.unavailable = copies->error;
    figures.push_back(f);
}

}  // namespace lapse::bench::detail
