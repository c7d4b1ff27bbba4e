// Terminal helpers: progress that shows on a terminal and stays quiet when
// stderr is a file or a pipe (CI logs), and a human-readable duration.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lapse::cli {

// One status line on stderr, rewritten in place, only when stderr is a
// terminal (and LAPSE_NO_PROGRESS is unset). Cleared by done() or the
// destructor.
class Progress {
public:
    Progress();
    ~Progress();
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    bool enabled() const noexcept { return enabled_; }
    void update(std::string_view line);
    void done();

private:
    bool enabled_;
    bool shown_ = false;
};

// "812 ns", "12.345 us", "3.210 ms", "1.500 s": three decimals, unit chosen
// by magnitude.
std::string human_duration(double ns);

}  // namespace lapse::cli
