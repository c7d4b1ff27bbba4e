// Perfetto export: the output decoded with the generated classes of
// perfetto_trace.proto, every window rebuilt the way a viewer does (BEGIN
// and END sorted by time, a stack per track) and checked against the input.
#include "chrome_trace.hpp"
#include "export/export_format.hpp"
#include "memory_record_source.hpp"
#include "perfetto_decode.hpp"
#include "session_maker.hpp"

#include "perfetto_trace.pb.h"

#include <lapse/core.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <iostream>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>
#include <sys/wait.h>
#include <thread>

using namespace lapse;
using namespace lapse::test;
using lapse::cli::ExportCounts;
namespace pb = perfetto::protos;

namespace {

std::string export_sessions(const std::vector<const Session*>& sessions, ExportCounts& counts,
                            const std::string& format = "perfetto")
{
    std::vector<std::unique_ptr<TempFile>> files;
    std::vector<std::string> paths;
    for (const Session* s : sessions) {
        files.push_back(std::make_unique<TempFile>("in.lapse"));
        s->save(files.back()->path());
        paths.push_back(files.back()->str());
    }
    auto source = cli::open_record_source(paths);
    std::ostringstream out;
    cli::find_export_format(format)->write(*source, out, counts);
    return out.str();
}

std::string track_of(const WindowRecord& w)
{
    if (w.method == TimingMethod::system) return "thread " + std::to_string(w.thread);
    if (w.domain == ClockDomain::host_monotonic) return "stream " + std::to_string(w.stream) + " (host clock)";
    return "stream " + std::to_string(w.stream) + " (device clock: own timeline, not aligned with host)";
}

}  // namespace

TEST_CASE("perfetto export: every window comes back on its track with its start and end", "[export][perfetto]")
{
    Session session;
    session.set_backend({"cpu", "0.1.0", "cpu (2 worker streams)", 2, 0});
    session.add(make_window("outer", 111, 0, TimingMethod::system, ClockDomain::host_monotonic, 1'000, 10'000));
    session.add(make_window("inner", 111, 0, TimingMethod::system, ClockDomain::host_monotonic, 2'000, 3'000));
    session.add(device_window("A", 0, 5'000, 8'000));
    session.add(device_window("B", 0, 6'000, 9'000));      // overlaps A without nesting
    session.add(device_window("C", 0, 9'000, 9'500));      // touches B's end
    session.add(device_window("D", 0, 4'000, 5'000));      // ends where A (written earlier) starts
    session.add(device_window("long", 0, 20'000, 30'000));
    session.add(device_window("short", 0, 20'000, 25'000)); // equal start, inside, written later
    session.add(device_window("wide", 0, 40'000, 45'000));
    session.add(device_window("wider", 0, 40'000, 50'000)); // equal start, contains, written later
    session.add(make_window("dev", 1, 1, TimingMethod::device, ClockDomain::device, 500'000, 500'250));
    WindowRecord lost;
    lost.name = "lost";
    session.add(lost);
    WindowRecord broke;
    broke.name = "broke";
    broke.state = DurationState::failed;
    session.add(broke);

    ExportCounts counts;
    const std::string bytes = export_sessions({&session}, counts);
    pb::Trace trace;
    REQUIRE(trace.ParseFromString(bytes));
    CHECK(counts.written == 11);
    CHECK(counts.not_measured == 1);
    CHECK(counts.failed == 1);
    CHECK(counts.overlap_lanes >= 1);

    std::vector<Slice> expected;
    for (const WindowRecord& w : session.windows()) {
        if (w.state != DurationState::ready) continue;
        int64_t start = w.start_ns, end = w.end_ns;
        if (w.domain == ClockDomain::device) {  // not anchored: its first stamp placed at the first host stamp
            start = w.start_ns - 500'000 + 1'000;
            end = w.end_ns - 500'000 + 1'000;
        }
        expected.push_back({track_of(w), w.name, start, end, 0});
    }
    std::sort(expected.begin(), expected.end());
    CHECK(rebuild(trace) == expected);

    // Process track per input; no window differs from its track's default
    // method (and every window in the trace is ready), so none is annotated.
    bool process_named = false, annotated = false;
    for (const auto& p : trace.packet()) {
        if (p.has_track_descriptor() && p.track_descriptor().has_process())
            process_named = p.track_descriptor().process().process_name().find("(cpu on cpu") != std::string::npos;
        if (p.has_track_event() && p.track_event().debug_annotations_size() > 0) annotated = true;
    }
    CHECK(process_named);
    CHECK_FALSE(annotated);
}

TEST_CASE("perfetto export: random overlapping windows are never dropped or mis-nested", "[export][perfetto]")
{
    std::mt19937_64 rng(GENERATE(1u, 2u, 3u, 4u, 5u));
    std::uniform_int_distribution<int64_t> start(0, 100'000), len(0, 20'000), stream(0, 2);
    Session session;
    for (int i = 0; i < 3000; ++i) {
        const int64_t s = start(rng) / 100 * 100;  // coarse grid: many equal and touching stamps
        std::string name = "w";
        name += std::to_string(i % 37);
        session.add(device_window(std::move(name), static_cast<Stream>(stream(rng)), s,
                                  s + len(rng) / 100 * 100));
    }
    ExportCounts counts;
    pb::Trace trace;
    REQUIRE(trace.ParseFromString(export_sessions({&session}, counts)));
    std::vector<Slice> expected;
    for (const WindowRecord& w : session.windows()) expected.push_back({track_of(w), w.name, w.start_ns, w.end_ns, 0});
    std::sort(expected.begin(), expected.end());
    const std::vector<Slice> got = rebuild(trace);
    CHECK(got.size() == expected.size());
    CHECK(got == expected);
}

TEST_CASE("perfetto export: a window that holds earlier work says so, and only that one", "[export][perfetto]")
{
    MemoryRecordSource::Input input;
    input.info.path = "held";
    auto& r = input.records;
    r.push_back(device_window("plain", 0, 1'000, 2'000));
    r.push_back(device_window("held", 0, 3'000, 4'000));
    r.back().flags = LAPSE_DURATION_HOLDS_EARLIER_WORK;
    r.push_back(make_window("held on thread", 5, 0, TimingMethod::system, ClockDomain::host_monotonic, 5'000, 6'000));
    r.back().flags = LAPSE_DURATION_HOLDS_EARLIER_WORK;
    r.push_back(device_window("after", 0, 7'000, 8'000));

    MemoryRecordSource source({input});
    std::ostringstream out;
    ExportCounts counts;
    cli::write_perfetto_export(source, out, counts);
    pb::Trace trace;
    REQUIRE(trace.ParseFromString(out.str()));
    const DecodedTrace decoded = decode_perfetto(trace);
    CHECK(decoded.slices.size() == r.size());
    using Annotation = std::tuple<std::string, std::string, std::string>;
    auto annotations = decoded.annotations;
    std::sort(annotations.begin(), annotations.end());
    CHECK(annotations == std::vector<Annotation>{{"held", "holds_earlier_work", "true"},
                                                 {"held on thread", "holds_earlier_work", "true"}});
}

TEST_CASE("perfetto export: several inputs share one timeline, a process track each", "[export][perfetto]")
{
    Session a, b;
    a.add(device_window("x", 0, 1'000, 2'000));
    b.add(device_window("x", 0, 1'500, 2'500));
    ExportCounts counts;
    pb::Trace trace;
    REQUIRE(trace.ParseFromString(export_sessions({&a, &b}, counts)));
    const std::vector<Slice> got = rebuild(trace);
    REQUIRE(got.size() == 2);
    CHECK(got[0] == Slice{"stream 0 (host clock)", "x", 1'000, 2'000, 0});
    CHECK(got[1] == Slice{"stream 0 (host clock)", "x", 1'500, 2'500, 1});
    int processes = 0;
    for (const auto& p : trace.packet())
        if (p.has_track_descriptor() && p.track_descriptor().has_process()) ++processes;
    CHECK(processes == 2);
}

TEST_CASE("perfetto export: every split pair is a flow from its opening to its closing thread", "[export][perfetto]")
{
    MemoryRecordSource::Input input;
    input.info.path = "split";
    input.info.device_clock_anchors[3] = cli::ClockAnchor{2'000'000, 100};  // device 100 ns = host 2 ms
    auto closed_by = [](WindowRecord w, uint64_t closer) {
        w.close_thread = closer;
        return w;
    };
    auto& r = input.records;
    r.push_back(closed_by(make_window("handoff", 11, 0, TimingMethod::system, ClockDomain::host_monotonic, 10'000, 20'000), 12));
    r.push_back(closed_by(device_window("upload", 0, 15'000, 30'000), 13));
    r.push_back(closed_by(make_window("dev", 11, 3, TimingMethod::device, ClockDomain::device, 200, 700), 12));
    r.push_back(closed_by(make_window("same", 11, 0, TimingMethod::system, ClockDomain::host_monotonic, 40'000, 41'000), 11));
    r.push_back(make_window("odd", 1, 0, TimingMethod::none, ClockDomain::host_monotonic, 50'000, 51'000));
    std::mt19937_64 rng(11);
    std::uniform_int_distribution<uint64_t> thread(1, 6);
    for (int i = 0; i < 500; ++i) {  // serial split pairs between random threads, and some that are not
        const uint64_t opener = thread(rng), closer = thread(rng);
        r.push_back(closed_by(device_window("w" + std::to_string(i % 5), 1, 100'000 + i * 1'000, 100'000 + i * 1'000 + 900), closer));
        r.back().thread = opener;
    }

    std::vector<Flow> expected;
    for (const WindowRecord& w : r) {
        if (w.close_thread == 0 || w.close_thread == w.thread) continue;
        const int64_t shift = w.domain == ClockDomain::device ? 2'000'000 - 100 : 0;
        expected.push_back({"thread " + std::to_string(w.thread) + " (handoffs)", "open " + w.name, w.start_ns + shift,
                            "thread " + std::to_string(w.close_thread) + " (handoffs)", "close " + w.name, w.end_ns + shift});
    }
    std::sort(expected.begin(), expected.end());
    REQUIRE(expected.size() > 400);

    MemoryRecordSource source({input});
    std::ostringstream out;
    ExportCounts counts;
    cli::write_perfetto_export(source, out, counts);
    pb::Trace trace;
    REQUIRE(trace.ParseFromString(out.str()));
    const DecodedTrace decoded = decode_perfetto(trace);
    CHECK(counts.flows == expected.size());
    CHECK(decoded.flows == expected);
    CHECK(decoded.slices.size() == r.size());
    CHECK(std::count(decoded.slices.begin(), decoded.slices.end(),
                     Slice{"stream 3 (device clock, anchored to host)", "dev", 2'000'100, 2'000'600, 0}) == 1);
    // Annotations only where a window differs from its track's default
    // (method device on a stream track, system on a thread track).
    using Annotation = std::tuple<std::string, std::string, std::string>;
    CHECK(decoded.annotations == std::vector<Annotation>{{"odd", "method", "none"}});
}

TEST_CASE("perfetto export: the split pairs of a real capture are its flows", "[export][perfetto][capture]")
{
    TempFile file("split.lapse-capture");
    {
        Device device = Runtime().open(Config::from_string("[backend]\nplugin = \"cpu\"\nstreams = 2\n", "<test>", {}));
        CaptureOptions o;
        o.path = file.path();
        o.policy = CapturePolicy::block;
        auto capture = Capture::open(o);
        device.record_into(capture);
        std::vector<Window> open;
        for (int i = 0; i < 200; ++i) open.push_back(device.profile_start(i & 1, i % 3 == 0 ? "handoff" : "upload"));
        for (int i = 0; i < 50; ++i) device.profile(0, [] {}, {.name = "same thread"});
        std::thread other([&] {
            for (auto& w : open) device.profile_end(w);
        });
        other.join();
        device.close();
        capture->close();
    }
    std::vector<Flow> expected;
    CaptureReader reader(file.path());
    CapturedWindow w;
    std::size_t windows = 0;
    while (reader.next(w)) {
        ++windows;
        REQUIRE(w.state == DurationState::ready);
        if (w.close_thread == w.thread) continue;
        const std::string name(w.name);
        REQUIRE(w.domain == ClockDomain::host_monotonic);
        expected.push_back({"thread " + std::to_string(w.thread) + " (handoffs)", "open " + name, w.start_ns,
                            "thread " + std::to_string(w.close_thread) + " (handoffs)", "close " + name, w.end_ns});
    }
    std::sort(expected.begin(), expected.end());
    CHECK(windows == 250);
    CHECK(expected.size() == 200);

    auto source = cli::open_record_source({file.str()});
    std::ostringstream out;
    ExportCounts counts;
    cli::write_perfetto_export(*source, out, counts);
    pb::Trace trace;
    REQUIRE(trace.ParseFromString(out.str()));
    const DecodedTrace decoded = decode_perfetto(trace);
    CHECK(decoded.flows == expected);
    CHECK(decoded.slices.size() == windows);
}

TEST_CASE("perfetto export: protoc --decode_raw accepts it, and it is at most a fifth of the Chrome JSON",
          "[export][perfetto]")
{
    std::mt19937_64 rng(7);
    // Stamps as a host's monotonic clock reads them after half a day up.
    constexpr int64_t uptime_ns = 43'200'000'000'000;
    Session session;
    session.set_backend({"cpu", "0.1.0", "cpu", 4, 0});
    for (Stream s = 0; s < 4; ++s) add_serial_windows(session, rng, "kernel_" + std::to_string(s), s, 5000, 50'000, 5'000,
                                                      uptime_ns);
    for (int i = 0; i < 5000; ++i)
        session.add(make_window("host_step", 4242, 0, TimingMethod::system, ClockDomain::host_monotonic,
                                uptime_ns + i * 10'000, uptime_ns + i * 10'000 + 9'000));
    ExportCounts pc, cc;
    const std::string perfetto = export_sessions({&session}, pc);
    const std::string chrome = export_sessions({&session}, cc, "chrome");
    CHECK(pc.written == 25'000);
    CHECK(cc.written == 25'000);
    INFO("perfetto " << perfetto.size() << " bytes, chrome " << chrome.size() << " bytes");
    CHECK(perfetto.size() * 5 <= chrome.size());
    // Still every window, on its track, at its start and end.
    std::vector<Slice> expected;
    for (const WindowRecord& w : session.windows()) expected.push_back({track_of(w), w.name, w.start_ns, w.end_ns, 0});
    std::sort(expected.begin(), expected.end());
    pb::Trace trace;
    REQUIRE(trace.ParseFromString(perfetto));
    CHECK(rebuild(trace) == expected);

    TempFile file("trace.pftrace");
    std::ofstream(file.path(), std::ios::binary) << perfetto;
    const std::string cmd = "protoc --decode_raw < '" + file.str() + "' > /dev/null";
    CHECK(std::system(cmd.c_str()) == 0);
}

// Figures for docs/performance.md (hidden: `tools_view_tests "[.perf]"`).
TEST_CASE("perfetto export: speed on a million windows", "[.perf]")
{
    std::mt19937_64 rng(3);
    Session session;
    for (Stream s = 0; s < 4; ++s)
        add_serial_windows(session, rng, "kernel_" + std::to_string(s), s, 250'000, 20'000, 2'000, 43'200'000'000'000);
    TempFile in("big.lapse");
    session.save(in.path());
    // Loading the archive is the session format's cost, not the exporter's.
    MemoryRecordSource::Input input;
    input.info.path = in.str();
    input.records = Session::load(in.path()).windows();
    MemoryRecordSource replay({input});
    std::ostringstream out;
    ExportCounts counts;
    // CPU time beside wall time: on a shared machine the wall clock counts
    // other people's work too.
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    cli::write_perfetto_export(replay, out, counts);
    const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "perfetto export: " << counts.written << " windows in " << s << " s wall (" << counts.written / s
              << " windows/s), " << cpu << " s CPU (" << counts.written / cpu << " windows/s), "
              << out.str().size() / static_cast<double>(counts.written) << " bytes/window\n";
    CHECK(counts.written == 1'000'000);
}

// Figures for docs/performance.md: n windows that all overlap without
// nesting (each needs its own lane), for n = 40k, 160k, 640k.
TEST_CASE("export: overlapping windows: time against their number", "[.perf]")
{
    for (const int n : {40'000, 160'000, 640'000}) {
        auto session = std::make_shared<Session>();
        for (int i = 0; i < n; ++i)
            session->add(device_window("w", 0, 1'000'000 + int64_t{i} * 10, 1'000'000 + int64_t{i} * 10 + 1'000'000'000));
        MemoryRecordSource::Input input;
        input.info.path = "stair";
        input.records = session->windows();
        MemoryRecordSource source({input});
        std::ostringstream perfetto, chrome;
        ExportCounts counts;
        const std::clock_t c0 = std::clock();
        cli::write_perfetto_export(source, perfetto, counts);
        const std::clock_t c1 = std::clock();
        cli::ChromeTraceStats stats;
        cli::write_chrome_trace(source, chrome, stats);
        const std::clock_t c2 = std::clock();
        std::cout << n << " overlapping windows: perfetto " << static_cast<double>(c1 - c0) / CLOCKS_PER_SEC
                  << " s CPU, chrome " << static_cast<double>(c2 - c1) / CLOCKS_PER_SEC << " s CPU ("
                  << stats.lane_probes << " lane tries)\n";
        CHECK(counts.written == static_cast<uint64_t>(n));
        CHECK(stats.slices == static_cast<uint64_t>(n));
    }
}

#ifdef LAPSE_CLI
TEST_CASE("lapse export --format perfetto: several inputs in one file; a bad input leaves no file and exits 2",
          "[export][perfetto][cli]")
{
    Session a, b;
    a.add(device_window("x", 0, 1'000, 2'000));
    b.add(device_window("y", 0, 1'500, 2'500));
    TempFile fa("a.lapse"), fb("b.lapse"), junk("junk.lapse"), trace_file("out.pftrace");
    a.save(fa.path());
    b.save(fb.path());
    std::ofstream(junk.path()) << "not a session\n";
    const std::string cli = std::string(LAPSE_CLI) + " export --format perfetto ";
    REQUIRE(std::system((cli + fa.str() + " " + fb.str() + " -o " + trace_file.str()).c_str()) == 0);
    std::ifstream in(trace_file.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    pb::Trace trace;
    REQUIRE(trace.ParseFromString(bytes));
    CHECK(rebuild(trace).size() == 2);
    const int rc = std::system((cli + fa.str() + " " + junk.str() + " -o " + trace_file.str() + " 2>/dev/null").c_str());
    CHECK(WEXITSTATUS(rc) == 2);
    CHECK_FALSE(std::filesystem::exists(trace_file.path()));
}
#endif
