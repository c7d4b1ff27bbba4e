// Sessions for the tests of export, diff and the HTML report: windows made
// to order, and a session archive written where the tools read it.
#pragma once

#include <lapse/core/session.hpp>

#include <filesystem>
#include <random>
#include <string>
#include <unistd.h>

namespace lapse::test {

inline WindowRecord make_window(std::string name, uint64_t thread, Stream stream, TimingMethod method,
                                ClockDomain domain, int64_t start, int64_t end)
{
    WindowRecord w;
    w.name = std::move(name);
    w.thread = thread;
    w.stream = stream;
    w.method = method;
    w.state = DurationState::ready;
    w.domain = domain;
    w.start_ns = start;
    w.end_ns = end;
    return w;
}

inline WindowRecord device_window(std::string name, Stream stream, int64_t start, int64_t end)
{
    return make_window(std::move(name), 1, stream, TimingMethod::device, ClockDomain::host_monotonic, start, end);
}

// A file under the temporary directory, removed when the test ends.
class TempFile {
public:
    explicit TempFile(const std::string& stem)
        : path_(std::filesystem::temp_directory_path() /
                ("lapse_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++) + "_" + stem))
    {
    }
    ~TempFile()
    {
        std::error_code ec;
        std::filesystem::remove(path_, ec);
    }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    const std::filesystem::path& path() const { return path_; }
    std::string str() const { return path_.string(); }

private:
    static int& counter()
    {
        static int n = 0;
        return n;
    }
    std::filesystem::path path_;
};

// `count` back-to-back device windows named `name` on `stream`, durations
// drawn from a normal distribution (mean_ns, sd_ns), clamped to >= 1 ns.
inline void add_serial_windows(Session& s, std::mt19937_64& rng, const std::string& name, Stream stream,
                               std::size_t count, double mean_ns, double sd_ns, int64_t start = 1'000'000)
{
    std::normal_distribution<double> d(mean_ns, sd_ns);
    int64_t t = start;
    for (std::size_t i = 0; i < count; ++i) {
        const int64_t ns = std::max<int64_t>(1, static_cast<int64_t>(d(rng)));
        s.add(device_window(name, stream, t, t + ns));
        t += ns + 100;
    }
}

}  // namespace lapse::test
