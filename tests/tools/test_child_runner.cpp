// The child-process runner behind `lapse validate`: how each way a check can
// end is reported.
#include "child_runner.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

using lapse::cli::Outcome;
using lapse::cli::run_in_child;
using namespace std::chrono_literals;

TEST_CASE("child runner: outcomes reported by the child", "[validate]")
{
    auto pass = run_in_child([] { return std::make_pair(Outcome::pass, std::string("fine")); }, 10s);
    CHECK(pass.outcome == Outcome::pass);
    CHECK(pass.message == "fine");
    auto failed = run_in_child([] { return std::make_pair(Outcome::fail, std::string("bad\nsecond line")); }, 10s);
    CHECK(failed.outcome == Outcome::fail);
    CHECK(failed.message == "bad\nsecond line");
    auto skipped = run_in_child([] { return std::make_pair(Outcome::skip, std::string("n/a")); }, 10s);
    CHECK(skipped.outcome == Outcome::skip);
}

TEST_CASE("child runner: a crash is a failure naming the signal", "[validate]")
{
    auto r = run_in_child(
        []() -> std::pair<Outcome, std::string> {
            std::raise(SIGSEGV);
            return {Outcome::pass, "unreachable"};
        },
        10s);
    CHECK(r.outcome == Outcome::fail);
    // Under AddressSanitizer the signal becomes a report and exit(1).
    CHECK_THAT(r.message, Catch::StartsWith("crashed:"));
#ifndef LAPSE_SANITIZED
    CHECK_THAT(r.message, Catch::Contains("SIGSEGV"));
#endif
    auto aborted = run_in_child(
        []() -> std::pair<Outcome, std::string> {
            std::abort();
        },
        10s);
    CHECK(aborted.outcome == Outcome::fail);
    CHECK_THAT(aborted.message, Catch::StartsWith("crashed:"));
}

TEST_CASE("child runner: a hang is killed at the timeout", "[validate]")
{
    auto r = run_in_child(
        []() -> std::pair<Outcome, std::string> {
            for (;;) pause();
        },
        300ms);
    CHECK(r.outcome == Outcome::fail);
    CHECK_THAT(r.message, Catch::StartsWith("timed out"));
    CHECK(r.seconds < 5.0);
}

TEST_CASE("child runner: stderr is kept, and exiting without a verdict fails", "[validate]")
{
    auto r = run_in_child(
        []() -> std::pair<Outcome, std::string> {
            std::fprintf(stderr, "the plugin said this\n");
            std::fflush(stderr);
            std::_Exit(3);
        },
        10s);
    CHECK(r.outcome == Outcome::fail);
    CHECK_THAT(r.message, Catch::Contains("status 3 without reporting"));
    CHECK_THAT(r.stderr_tail, Catch::Contains("the plugin said this"));
}
