// RecordSource: session archives read one input after the other, a bad
// input named in the error; and what the consumers do with the fields only
// a capture reader will fill (through a test double).
#include "diff_model.hpp"
#include "export/export_format.hpp"
#include "memory_record_source.hpp"
#include "session_maker.hpp"

#include "perfetto_decode.hpp"
#include "perfetto_trace.pb.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

using namespace lapse;
using namespace lapse::test;
namespace pb = perfetto::protos;

TEST_CASE("record source: session archives in order, each with its backend", "[record_source]")
{
    Session a, b;
    a.set_backend({"cpu", "1", "dev a", 1, 0});
    b.set_backend({"vulkan", "2", "dev b", 1, 0});
    a.add(device_window("x", 0, 1, 2));
    b.add(device_window("y", 0, 3, 4));
    b.add(device_window("z", 0, 5, 6));
    TempFile fa("a.lapse"), fb("b.lapse");
    a.save(fa.path());
    b.save(fb.path());
    auto source = cli::open_record_source({fa.str(), fb.str()});
    CHECK(source->input_count() == 2);
    std::vector<std::string> seen;
    cli::RecordedWindow w;
    while (const auto i = source->next_input()) {
        CHECK(source->info().path == (*i == 0 ? fa.str() : fb.str()));
        CHECK(source->info().backend.plugin == (*i == 0 ? "cpu" : "vulkan"));
        CHECK_FALSE(source->info().counts_recorded);  // archives do not record dropped windows
        while (source->next_record(w)) seen.push_back(std::to_string(*i) + std::string(w.name));
    }
    CHECK(seen == std::vector<std::string>{"0x", "1y", "1z"});
}

TEST_CASE("record source: a damaged input fails with its name", "[record_source]")
{
    TempFile junk("junk.lapse");
    std::ofstream(junk.path()) << "not a session\n";
    auto source = cli::open_record_source({junk.str()});
    CHECK_THROWS_WITH(source->next_input(), Catch::Contains(junk.str()));
}

TEST_CASE("perfetto export: a recorded clock anchor puts device stamps on the host timeline", "[export][perfetto]")
{
    MemoryRecordSource::Input input;
    input.info.path = "anchored";
    input.info.device_clock_anchors[2] = cli::ClockAnchor{1'000'000, 50};  // device 50 ns = host 1 ms
    input.records.push_back(device_window("host", 0, 900'000, 950'000));
    input.records.push_back(make_window("dev", 1, 2, TimingMethod::device, ClockDomain::device, 150, 400));
    MemoryRecordSource source({input});
    std::ostringstream out;
    cli::ExportCounts counts;
    cli::write_perfetto_export(source, out, counts);
    pb::Trace trace;
    REQUIRE(trace.ParseFromString(out.str()));
    const std::vector<Slice> got = rebuild(trace);
    CHECK(got == std::vector<Slice>{{"stream 0 (host clock)", "host", 900'000, 950'000, 0},
                                    {"stream 2 (device clock, anchored to host)", "dev", 1'000'100, 1'000'350, 0}});
    CHECK(counts.written == 2);
}

TEST_CASE("diff: dropped and unflushed windows are reported per input where recorded", "[diff][record_source]")
{
    MemoryRecordSource::Input base, next;
    base.info.path = "base";
    next.info.path = "new";
    next.info.counts_recorded = true;
    next.info.dropped = 12;
    next.info.unflushed = 3;
    next.info.cut_short = true;
    for (int i = 0; i < 10; ++i) {
        base.records.push_back(device_window("k", 0, i * 100, i * 100 + 50));
        next.records.push_back(device_window("k", 0, i * 100, i * 100 + 50));
    }
    MemoryRecordSource source({base, next});
    const cli::DiffOptions options;
    const cli::DiffResult r = cli::compute_diff(source, options);
    const nlohmann::ordered_json j = cli::diff_json(r, options);
    CHECK(j["base"]["dropped"].is_null());  // not recorded is not zero
    CHECK(j["new"]["dropped"] == 12);
    CHECK(j["new"]["unflushed"] == 3);
    CHECK(j["new"]["cut_short"] == true);
    CHECK(j["windows"][0]["verdict"] == "no change");
}
