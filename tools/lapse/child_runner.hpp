// Runs one function in a forked child with a timeout, and says how it ended.
//
// The child reports over a pipe; its stderr goes to a second pipe whose tail
// is kept for the report. A child that dies on a signal is "crashed:
// SIGSEGV", one that outlives the timeout is killed (SIGKILL, with its
// process group) and "timed out". The parent must have no other threads
// when it forks (ThreadSanitizer and glibc both assume so): the runner
// itself starts none.
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace lapse::cli {

enum class Outcome { pass, fail, skip };

struct ChildResult {
    Outcome outcome = Outcome::fail;
    std::string message;      // why it failed or was skipped; a note when passed
    std::string stderr_tail;  // the last lines the child wrote to stderr
    double seconds = 0;
};

// `body` returns the outcome and message; it runs only in the child.
ChildResult run_in_child(const std::function<std::pair<Outcome, std::string>()>& body,
                         std::chrono::milliseconds timeout);

const char* to_string(Outcome outcome) noexcept;  // "pass", "fail", "skip"

}  // namespace lapse::cli
