#include "terminal.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace lapse::cli {

Progress::Progress() : enabled_(isatty(STDERR_FILENO) == 1 && std::getenv("LAPSE_NO_PROGRESS") == nullptr) {}

Progress::~Progress() { done(); }

void Progress::update(std::string_view line)
{
    if (!enabled_) return;
    // \r then clear-to-end-of-line: a shorter line leaves no tail behind.
    std::fprintf(stderr, "\r\033[K%.*s", static_cast<int>(line.size()), line.data());
    std::fflush(stderr);
    shown_ = true;
}

void Progress::done()
{
    if (!enabled_ || !shown_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    shown_ = false;
}

std::string human_duration(double ns)
{
    char buf[64];
    const double a = std::fabs(ns);
    if (a < 1e3)
        std::snprintf(buf, sizeof buf, "%.0f ns", ns);
    else if (a < 1e6)
        std::snprintf(buf, sizeof buf, "%.3f us", ns / 1e3);
    else if (a < 1e9)
        std::snprintf(buf, sizeof buf, "%.3f ms", ns / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%.3f s", ns / 1e9);
    return buf;
}

}  // namespace lapse::cli
