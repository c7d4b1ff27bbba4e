// Internal: the [capture] table of a config, and the backend stack as a
// config opened it (both read in config.cpp, where toml++ lives).
#pragma once

#include <lapse/core/capture.hpp>

#include <optional>
#include <string>

namespace lapse::detail {

struct ConfigDocument;
struct ConfigNode;

// The [capture] and [metrics] tables, or nullopt when the config has
// neither:
//   [capture]
//   path = "run.lapse-capture"   # relative to the config's folder
//   budget = "8 MiB"             # or an integer number of bytes; default 4 MiB
//   policy = "drop"              # or "block"
//   flush_ms = 100               # at most this long between chunk writes
//   [metrics]                    # Prometheus metrics (docs/metrics.md)
//   listen = "127.0.0.1:9464"    # the default; loopback unless allow_remote
//   allow_remote = false         # true: any address, e.g. "0.0.0.0:9464"
//   max_series = 1000            # label sets at most
// [metrics] alone records too: the collector runs, the windows feed the
// metrics and no file is written. Unknown keys, wrong types and refused
// addresses throw Error naming file:line:col and the key.
std::optional<CaptureOptions> read_capture_settings(const ConfigDocument& doc);

// "forward (backend) -> cpu (backend.inner)": each layer the open read.
std::string describe_stack(const ConfigNode& root);

}  // namespace lapse::detail
