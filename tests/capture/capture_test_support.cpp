#include "capture_test_support.hpp"

#include <sstream>

namespace capture_test {

lapse::Config cpu_config(int streams)
{
    return lapse::Config::from_string("[backend]\nplugin = \"cpu\"\nstreams = " + std::to_string(streams) + "\n",
                                      "<capture test>", {});
}

std::shared_ptr<lapse::Capture> open_capture(const std::filesystem::path& file, uint64_t budget_bytes)
{
    lapse::CaptureOptions o;
    o.path = file;
    o.budget_bytes = budget_bytes;
    return lapse::Capture::open(std::move(o));
}

std::map<std::string, uint64_t> ReadBack::count_by_name() const
{
    std::map<std::string, uint64_t> out;
    for (const ReadWindow& w : windows) ++out[w.name];
    return out;
}

namespace {
ReadBack read_from(lapse::CaptureReader& reader)
{
    ReadBack r;
    lapse::CapturedWindow w;
    while (reader.next(w)) r.windows.push_back({std::string(w.name), w, std::string(w.cause)});
    for (ReadWindow& rw : r.windows) rw.w.name = rw.name, rw.w.cause = rw.cause;
    r.header = reader.header();
    r.sources = reader.sources();
    r.damage = reader.damage();
    r.dropped = reader.dropped();
    r.complete = reader.complete();
    r.last_chunk_ns = reader.last_chunk_monotonic_ns();
    return r;
}
}  // namespace

ReadBack read_all(const std::filesystem::path& file)
{
    lapse::CaptureReader reader(file);
    return read_from(reader);
}

ReadBack read_all(const std::string& bytes)
{
    lapse::CaptureReader reader(std::make_unique<std::istringstream>(bytes), "<memory>");
    return read_from(reader);
}

}  // namespace capture_test
