// lapse report / export / run over captures, end to end through the CLI.
#include "capture_test_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

extern char** environ;

using namespace capture_test;

namespace {

struct Run {
    int status = -1;
    std::string out, err;
};

Run run(const std::string& args, const std::filesystem::path& scratch)
{
    const auto err_file = scratch / "stderr.txt";
    const std::string cmd = std::string("'") + LAPSE_CLI + "' " + args + " 2>'" + err_file.string() + "'";
    Run r;
    FILE* p = ::popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    char buf[65536];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int status = ::pclose(p);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = read_file(err_file);
    return r;
}

std::string q(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

}  // namespace

TEST_CASE("tools: two processes' captures merge on one timeline in the order of their realtime anchors", "[capture][tools][merge]")
{
    TempDir dir;
    const auto a = dir.path / "a.lapse-capture", b = dir.path / "b.lapse-capture";
    REQUIRE(run("run --capture " + q(a) + " --seconds 0.3", dir.path).status == 0);
    REQUIRE(run("run --capture " + q(b) + " --seconds 0.3", dir.path).status == 0);
    // Given in the wrong order: merged by anchors.
    const Run report = run("report " + q(b) + " " + q(a) + " --json", dir.path);
    INFO(report.err);
    REQUIRE(report.status == 0);
    const auto j = nlohmann::json::parse(report.out);
    REQUIRE(j["inputs"].size() == 2);
    CHECK(j["inputs"][0]["file"] == a.string());
    CHECK(j["inputs"][1]["file"] == b.string());
    CHECK(j["inputs"][0]["pid"] != j["inputs"][1]["pid"]);
    CHECK(j["inputs"][0]["complete"] == true);

    const Run trace = run("export " + q(b) + " " + q(a) + " -o -", dir.path);
    REQUIRE(trace.status == 0);
    const auto t = nlohmann::json::parse(trace.out);
    double a_last_end = 0, b_first_start = 1e300;
    std::size_t a_slices = 0, b_slices = 0;
    for (const auto& e : t["traceEvents"]) {
        if (e["ph"] != "X" || e["cat"] != "window" || e["args"]["clock"] != "host") continue;
        const double ts = e["ts"], dur = e["dur"];
        if (e["pid"].get<int>() < 4) {
            a_last_end = std::max(a_last_end, ts + dur);
            ++a_slices;
        } else {
            b_first_start = std::min(b_first_start, ts);
            ++b_slices;
        }
    }
    CHECK(a_slices > 0);
    CHECK(b_slices > 0);
    CHECK(a_last_end <= b_first_start);  // a ran, then b: on one timeline
}

TEST_CASE("tools: report says a SIGKILLed host's capture was cut short, and when", "[capture][tools][crash]")
{
    TempDir dir;
    const auto file = dir.path / "killed.lapse-capture";
    const std::string file_arg = file.string();
    const char* argv[] = {LAPSE_CLI, "run", "--capture", file_arg.c_str(), "--seconds", "60", nullptr};
    pid_t child = 0;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    REQUIRE(::posix_spawn(&child, LAPSE_CLI, &actions, nullptr, const_cast<char**>(argv), environ) == 0);
    posix_spawn_file_actions_destroy(&actions);
    for (int i = 0; i < 1000 && read_file(file).size() < 4000; ++i) ::usleep(10000);
    ::usleep(300000);
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    const Run r = run("report " + q(file), dir.path);
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK_THAT(r.out, Catch::Contains("CUT SHORT") && Catch::Contains("last complete chunk was written at") &&
                          Catch::Contains("sort 200k"));
    CHECK_THAT(r.err, Catch::Contains("CUT SHORT"));
    const auto j = nlohmann::json::parse(run("report " + q(file) + " --json", dir.path).out);
    CHECK(j["inputs"][0]["cut_short"] == true);
    CHECK(j["inputs"][0]["last_chunk_realtime_ns"].get<int64_t>() > j["inputs"][0]["anchor_realtime_ns"].get<int64_t>());
}

TEST_CASE("tools: names that are not UTF-8 or hold escape sequences never break report or export", "[capture][tools]")
{
    TempDir dir;
    const auto file = dir.path / "names.lapse-capture";
    const std::string hostile = std::string("bad\xff\xfe name \x1b[31mred\x1b[0m \x07") + "\xc2\x9b" + "end";
    {
        lapse::CaptureOptions o;
        o.path = file;
        lapse::Runtime runtime;
        runtime.record_into(lapse::Capture::open(o));
        lapse::Device device = runtime.open(cpu_config());
        for (int i = 0; i < 3; ++i) device.profile(0, [] {}, {.name = hostile});
    }
    const Run json = run("report " + q(file) + " --json", dir.path);
    REQUIRE(json.status == 0);
    const auto j = nlohmann::json::parse(json.out);
    REQUIRE(j["windows"].size() == 1);
    CHECK(j["windows"][0]["count"].get<int>() + j["windows"][0]["not_measured"].get<int>() == 3);
    const Run text = run("report " + q(file), dir.path);
    REQUIRE(text.status == 0);
    CHECK(text.out.find('\x1b') == std::string::npos);
    CHECK(text.out.find('\x07') == std::string::npos);
    CHECK(text.out.find("\xc2\x9b") == std::string::npos);
    CHECK(text.out.find("bad?? name ?[31mred?[0m ??end") != std::string::npos);
    const Run trace = run("export " + q(file) + " -o -", dir.path);
    REQUIRE(trace.status == 0);
    CHECK_NOTHROW(nlohmann::json::parse(trace.out));
}

TEST_CASE("tools: a split pair is drawn as a flow from the opening thread to the closing one", "[capture][tools][split]")
{
    TempDir dir;
    const auto file = dir.path / "flow.lapse-capture";
    {
        lapse::CaptureOptions o;
        o.path = file;
        lapse::Runtime runtime;
        runtime.record_into(lapse::Capture::open(o));
        lapse::Device device = runtime.open(cpu_config());
        lapse::Window w = device.profile_start(0, "handed over");
        device.submit(0, [] {});
        std::thread([&] { device.profile_end(w); }).join();
    }
    const Run trace = run("export " + q(file) + " -o -", dir.path);
    REQUIRE(trace.status == 0);
    const auto t = nlohmann::json::parse(trace.out);
    int starts = 0, finishes = 0;
    int64_t start_tid = -1, finish_tid = -1;
    for (const auto& e : t["traceEvents"]) {
        if (e["ph"] == "s") ++starts, start_tid = e["tid"];
        if (e["ph"] == "f") ++finishes, finish_tid = e["tid"];
    }
    CHECK(starts == 1);
    CHECK(finishes == 1);
    CHECK(start_tid != finish_tid);
}

TEST_CASE("tools: windows dropped past the budget are printed where nobody can miss them", "[capture][tools][budget]")
{
    TempDir dir;
    auto sink = std::make_shared<ThrottledMemorySink>(std::chrono::milliseconds(20));
    lapse::CaptureOptions o;
    o.sink = sink;
    o.budget_bytes = 64 * 1024;
    auto capture = lapse::Capture::open(o);
    {
        lapse::Runtime runtime;
        runtime.record_into(capture);
        lapse::Device device = runtime.open(cpu_config());
        for (int i = 0; i < 20000; ++i) device.profile(0, [] {}, {.name = "flood"});
    }
    capture->close();
    REQUIRE(capture->stats().dropped > 0);
    const auto file = dir.path / "dropped.lapse-capture";
    write_file(file, sink->bytes());
    const Run r = run("report " + q(file), dir.path);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Catch::Contains("DROPPED: " + std::to_string(capture->stats().dropped) + " windows"));
    CHECK_THAT(r.err, Catch::Contains("DROPPED"));
    const auto j = nlohmann::json::parse(run("report " + q(file) + " --json", dir.path).out);
    CHECK(j["dropped_total"] == capture->stats().dropped);
    CHECK(j["windows"][0]["dropped"] == capture->stats().dropped);
}

TEST_CASE("tools: lapse run --capture FILE -- PROGRAM records a host program with no code change", "[capture][tools][run]")
{
    TempDir dir;
    const auto file = dir.path / "program.lapse-capture";
    // The host program: `lapse run` itself, which knows nothing of the capture.
    const Run r = run("run --capture " + q(file) + " -- '" + std::string(LAPSE_CLI) + "' run", dir.path);
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    const ReadBack back = read_all(file);
    CHECK(back.complete);
    CHECK(back.count_by_name()["matmul 96x96"] == 4);
    const Run report = run("report " + q(file), dir.path);
    CHECK_THAT(report.out, Catch::Contains("matmul 96x96"));
}

TEST_CASE("tools: report and export show windows a plugin marked as holding earlier work or left with work queued",
          "[capture][tools][flags]")
{
    // The misbehaving test double answers every window READY with
    // WORK_QUEUED (7 ops) and HOLDS_EARLIER_WORK set: both must reach the
    // report, counted apart, never folded into the plain numbers.
    TempDir dir;
    const auto file = dir.path / "flags.lapse-capture";
    {
        lapse::Runtime runtime;
        lapse::Device device = runtime.open(
            lapse::Config::from_string("[lapse]\nsearch_paths = [\"" LAPSE_TEST_FIXTURE_DIR "\"]\n"
                                       "[backend]\nplugin = \"misbehaving\"\nanswer = \"flags\"\n",
                                       "<flags test>", {}));
        lapse::CaptureOptions o;
        o.path = file;
        device.record_into(lapse::Capture::open(std::move(o)));
        for (int i = 0; i < 5; ++i) device.profile(0, [] {}, {.name = "flagged"});
    }
    const Run json = run("report " + q(file) + " --json", dir.path);
    INFO(json.err);
    REQUIRE(json.status == 0);
    const auto rows = nlohmann::json::parse(json.out)["windows"];
    REQUIRE(rows.size() == 1);
    CHECK(rows[0]["count"] == 5);
    CHECK(rows[0]["unflushed"] == 5);
    CHECK(rows[0]["held_earlier"] == 5);

    const Run text = run("report " + q(file), dir.path);
    REQUIRE(text.status == 0);
    CHECK(text.out.find("held earlier+") != std::string::npos);
    CHECK(text.out.find("their numbers may hold some of that work") != std::string::npos);

    const Run csv = run("report " + q(file) + " --csv", dir.path);
    REQUIRE(csv.status == 0);
    CHECK(csv.out.find(",unflushed,held_earlier\n") != std::string::npos);
    CHECK(csv.out.find(",5,5\n") != std::string::npos);

    const Run trace = run("export " + q(file) + " -o -", dir.path);
    REQUIRE(trace.status == 0);
    const auto events = nlohmann::json::parse(trace.out);
    std::size_t slices = 0;
    for (const auto& e : events["traceEvents"]) {
        if (e["ph"] != "X" || e["cat"] != "window") continue;
        ++slices;
        CHECK(e["args"]["work_left_queued"] == true);
        CHECK(e["args"]["holds_earlier_work"] == true);
    }
    CHECK(slices == 5);
}
