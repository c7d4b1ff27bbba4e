#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <ctime>
#include <fstream>
#include <random>

namespace test {

std::filesystem::path fixture_dir() { return LAPSE_TEST_FIXTURE_DIR; }

lapse::Config config(const std::string& text, const std::filesystem::path& dir, const std::string& name)
{
    return lapse::Config::from_string(text, (dir / name).string(), dir);
}

lapse::Error error_of(const std::function<void()>& fn)
{
    try {
        fn();
    } catch (const lapse::Error& e) {
        return e;
    }
    FAIL("expected a lapse::Error, nothing was thrown");
    return lapse::Error(LAPSE_OK, "");
}

TempDir::TempDir()
{
    std::random_device rd;
    path = std::filesystem::temp_directory_path() / ("lapse-core-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path);
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
}

TempDir::~TempDir()
{
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
}

void write_file(const std::filesystem::path& file, const std::string& text)
{
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << text;
    REQUIRE(out.good());
}

int64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void spin_for_ns(int64_t ns)
{
    int64_t end = now_ns() + ns;
    volatile uint64_t sink = 0;
    while (now_ns() < end) sink = sink + 1;
}

}  // namespace test
