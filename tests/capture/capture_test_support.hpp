// Helpers shared by the capture tests, beside the ones every suite shares
// (<lapse_test/test_support.hpp>: TempDir, read_file, write_file).
#pragma once

#include <lapse/core.hpp>
#include <lapse_test/test_support.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace capture_test {

using lapse_test::read_file;
using lapse_test::TempDir;
using lapse_test::write_file;

// The CPU plugin, `streams` streams.
lapse::Config cpu_config(int streams = 2);

// A capture into `file`, holding at most `budget_bytes` in memory.
std::shared_ptr<lapse::Capture> open_capture(const std::filesystem::path& file,
                                             uint64_t budget_bytes = lapse::CaptureOptions{}.budget_bytes);

// Every window of a capture, read back (names copied).
struct ReadWindow {
    std::string name;
    lapse::CapturedWindow w;
    std::string cause;
};
struct ReadBack {
    lapse::CaptureHeader header;
    std::vector<lapse::CaptureSource> sources;
    std::vector<ReadWindow> windows;
    std::vector<lapse::CaptureDamage> damage;
    std::vector<lapse::CaptureDrop> dropped;
    bool complete = false;
    int64_t last_chunk_ns = 0;
    std::map<std::string, uint64_t> count_by_name() const;
};
ReadBack read_all(const std::filesystem::path& file);
ReadBack read_all(const std::string& bytes);

// TEST DOUBLE of a capture sink: keeps the bytes in memory, and sleeps
// `delay` on every write, so that the collector cannot keep up (the disk
// that is too slow).
class ThrottledMemorySink final : public lapse::CaptureSink {
public:
    explicit ThrottledMemorySink(std::chrono::microseconds delay = {}) : delay_(delay) {}
    void write(std::span<const std::byte> bytes) override
    {
        if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
        std::lock_guard lock(mutex_);
        bytes_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    }
    std::string bytes() const
    {
        std::lock_guard lock(mutex_);
        return bytes_;
    }

private:
    std::chrono::microseconds delay_;
    mutable std::mutex mutex_;
    std::string bytes_;
};

}  // namespace capture_test
