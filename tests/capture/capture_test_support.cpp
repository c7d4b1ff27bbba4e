#include "capture_test_support.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>

namespace capture_test {

TempDir::TempDir()
{
    std::random_device rd;
    path = std::filesystem::temp_directory_path() /
           ("lapse-capture-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path);
}

TempDir::~TempDir()
{
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
}

lapse::Config cpu_config(int streams)
{
    return lapse::Config::from_string("[backend]\nplugin = \"cpu\"\nstreams = " + std::to_string(streams) + "\n",
                                      "<capture test>", {});
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

std::string file_bytes(const std::filesystem::path& file)
{
    std::ifstream in(file, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_bytes(const std::filesystem::path& file, const std::string& bytes)
{
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << bytes;
}

}  // namespace capture_test
