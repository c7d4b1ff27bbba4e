// A plugin that crashes (SIGSEGV) when a device is opened. In-process, no
// host can survive that: a signal in the plugin's code kills the process
// that loaded it. What CAN be tested:
//   * loading it is fine (the crash is in open, not in the entry);
//   * opening it in a child process kills that child by SIGSEGV and leaves
//     the parent running (this is what `lapse validate` does for every
//     check; the ctest hardening.validate_reports_a_plugin_that_crashes_on_open
//     runs the real tool on this fixture when tools/ is built).
#include "support.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

namespace fs = std::filesystem;

TEST_CASE("a plugin that crashes on open kills only the child process that opened it", "[broken-plugin][crash]")
{
    const fs::path path = hardening::fixture("lapse_crash_on_open.so");
    hardening::CapturedLog log;
    lapse::Runtime runtime({{}, log.logger});
    {
        // Its entry is fine: loading it (as `lapse info` would) works.
        lapse::PluginLibrary lib = runtime.load_plugin(path.string());
        CHECK(std::string(lib.descriptor().name) == "crash_on_open");
    }
    CHECK_FALSE(hardening::mapped(path));

    std::fflush(nullptr);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // The sanitizers install their own SIGSEGV handler (which reports
        // and exits with a code); restore the default so the verdict is the
        // kernel's, as it would be in an uninstrumented host.
        std::signal(SIGSEGV, SIG_DFL);
        try {
            lapse::Runtime in_child;
            lapse::Device d = in_child.open(
                lapse::Config::from_string("[backend]\nplugin = \"" + path.string() + "\"\n", "<crash>", {}));
        } catch (...) {
            ::_exit(3);  // refused instead of crashing: the test fails below
        }
        ::_exit(0);  // opened without crashing: the fixture is broken
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    INFO("child status " << status);
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGSEGV);

    // The parent never mapped the file for the open and keeps working.
    CHECK_FALSE(hardening::mapped(path));
    hardening::require_host_still_works(runtime);
}
