#include "support.hpp"

#include <catch2/catch.hpp>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <random>
#include <sstream>

namespace hardening {

std::filesystem::path fixture(const std::string& file)
{
    return std::filesystem::path(LAPSE_HARDENING_FIXTURE_DIR) / file;
}

std::filesystem::path plugin_dir() { return LAPSE_HARDENING_PLUGIN_DIR; }

bool mapped(const std::filesystem::path& file)
{
    std::error_code ec;
    std::filesystem::path canonical = std::filesystem::canonical(file, ec);
    const std::string wanted = ec ? file.string() : canonical.string();
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        // The path is the last field; it may be followed by " (deleted)".
        auto at = line.find('/');
        if (at == std::string::npos) continue;
        std::string path = line.substr(at);
        if (path == wanted || path == wanted + " (deleted)") return true;
    }
    return false;
}

CapturedLog::CapturedLog()
    : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink<std::mutex>>(256))
{
    sink_->set_pattern("[%l] %v");
    logger = std::make_shared<spdlog::logger>("hardening", sink_);
    logger->set_level(spdlog::level::trace);
}

std::vector<std::string> CapturedLog::lines() const
{
    std::vector<std::string> out;
    for (auto& line : sink_->last_formatted()) {
        std::string l = line;
        while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
        out.push_back(l);
    }
    return out;
}

bool CapturedLog::contains(const std::string& text) const
{
    for (const auto& l : lines())
        if (l == text) return true;
    return false;
}

std::string CapturedLog::all() const
{
    std::string out;
    for (const auto& l : lines()) out += l + "\n";
    return out;
}

void require_host_still_works(lapse::Runtime& runtime)
{
    lapse::Device device = runtime.open(lapse::Config::from_string(
        "[backend]\nplugin = \"cpu\"\nstreams = 1\n", "<hardening: host check>", {}));
    int ran = 0;
    lapse::Duration d = device.profile(0, [&] { device.submit(0, [&] { ++ran; }); });
    auto interval = d.resolve();
    REQUIRE(interval.has_value());
    CHECK(interval->method == lapse::TimingMethod::device);
    CHECK(interval->ns() >= 0);
    device.sync();
    CHECK(ran == 1);
}

std::string joined(const std::vector<std::filesystem::path>& paths)
{
    std::string out;
    for (const auto& p : paths) out += (out.empty() ? "" : ":") + p.string();
    return out;
}

std::vector<BackendCase> backend_cases()
{
    std::vector<BackendCase> cases{{"cpu", "[backend]\nplugin = \"cpu\"\nstreams = 2\n"}};
#ifdef LAPSE_HARDENING_HAVE_FORWARD
    cases.push_back({"forward over cpu",
                     "[backend]\nplugin = \"forward\"\n[backend.inner]\nplugin = \"cpu\"\nstreams = 2\n"});
#endif
    return cases;
}

}  // namespace hardening
