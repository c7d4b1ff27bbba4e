#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <ctime>

namespace test {

std::filesystem::path fixture_dir() { return LAPSE_TEST_FIXTURE_DIR; }

lapse::Config config(const std::string& text, const std::filesystem::path& dir, const std::string& name)
{
    return lapse::Config::from_string(text, (dir / name).string(), dir);
}

lapse::Runtime& fixture_runtime()
{
    static lapse::Runtime r(lapse::RuntimeOptions{{fixture_dir()}, nullptr});
    return r;
}

lapse::Device open_backend(const std::string& backend_table)
{
    return fixture_runtime().open(config("[backend]\n" + backend_table));
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
