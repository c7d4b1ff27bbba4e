// One bench_* program: the concern(s) named by LAPSE_BENCH_CONCERNS at
// build time ("window", "window,system", ...), run in rounds, printed as the
// suite's table. `lapse bench` runs every concern in one process.
#include "suite.hpp"

#include <string>
#include <vector>

int main(int argc, char** argv)
{
    std::vector<std::string> concerns;
    std::string list = LAPSE_BENCH_CONCERNS, cur;
    for (char c : list + ",") {
        if (c == ',') {
            if (!cur.empty()) concerns.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    return lapse::bench::program_main(argc, argv, concerns);
}
