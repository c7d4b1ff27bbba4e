// Runs the window rules against the backend LAPSE_CONFORMANCE_CONFIG
// names. A backend that is unavailable here (no GPU, no driver) exits 77:
// ctest reports the config as skipped, with the reason printed.
#define CATCH_CONFIG_RUNNER
#include "conformance_support.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <ctime>
#include <iostream>

namespace conformance {

const std::string& config_path()
{
    static const std::string path = [] {
        const char* env = std::getenv("LAPSE_CONFORMANCE_CONFIG");
        return std::string(env != nullptr ? env : "");
    }();
    return path;
}

lapse::Device open_device()
{
    static lapse::Runtime runtime;
    return runtime.open(lapse::Config::from_file(config_path()));
}

int64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t spin_for_ns(int64_t ns)
{
    int64_t start = now_ns();
    int64_t end = start + ns;
    volatile uint64_t sink = 0;
    int64_t t = start;
    while ((t = now_ns()) < end) sink = sink + 1;
    return t - start;
}

}  // namespace conformance

int main(int argc, char* argv[])
{
    Catch::Session session;
    if (int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
    const auto& data = session.configData();
    bool listing = data.listTests || data.listTestNamesOnly || data.listTags || data.listReporters;
    if (!listing) {
        if (conformance::config_path().empty()) {
            std::cerr << "conformance: set LAPSE_CONFORMANCE_CONFIG to the config file of the backend to test\n";
            return 2;
        }
        try {
            lapse::Device probe = conformance::open_device();
            const auto& info = probe.info();
            std::cout << "conformance: " << conformance::config_path() << ": " << info.plugin << " on '" << info.name
                      << "', " << info.stream_count << " streams, capabilities: "
                      << lapse::capability_names(info.capabilities) << '\n';
        } catch (const lapse::Error& e) {
            if (e.status() == LAPSE_ERROR_UNAVAILABLE) {
                std::cout << "SKIP: " << conformance::config_path() << ": backend unavailable here: " << e.what()
                          << '\n';
                return 77;
            }
            std::cerr << "conformance: " << conformance::config_path() << ": cannot open the backend: " << e.what()
                      << '\n';
            return 1;
        }
    }
    return session.run();
}
