// Reads /metrics over HTTP (a plain GET on loopback, as Prometheus does)
// and parses the text exposition format into samples.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace metrics_test {

struct Sample {
    std::string name;                          // e.g. lapse_window_duration_seconds_count
    std::map<std::string, std::string> labels;
    double value = 0;
};

// The body of GET http://127.0.0.1:PORT/metrics. Throws std::runtime_error
// when it cannot connect or the answer is not 200.
std::string scrape(uint16_t port);

std::vector<Sample> parse(const std::string& text);

// The value of the one sample of `name` whose labels include `match`;
// -1 when there is none (counters and counts are never negative).
double value(const std::vector<Sample>& samples, const std::string& name,
             const std::map<std::string, std::string>& match);
// How many samples of `name` there are.
std::size_t count(const std::vector<Sample>& samples, const std::string& name);

}  // namespace metrics_test
