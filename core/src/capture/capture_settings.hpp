// Internal: the [capture] table of a config, and the backend stack as a
// config opened it (both read in config.cpp, where toml++ lives).
#pragma once

#include <lapse/core/capture.hpp>

#include <optional>
#include <string>

namespace lapse::detail {

struct ConfigDocument;
struct ConfigNode;

// The [capture] table, or nullopt when the config has none:
//   [capture]
//   path = "run.lapse-capture"   # relative to the config's folder
//   budget = "8 MiB"             # or an integer number of bytes; default 4 MiB
//   policy = "drop"              # or "block"
//   flush_ms = 100               # at most this long between chunk writes
// Unknown keys and wrong types throw Error naming file:line:col and key.
std::optional<CaptureOptions> read_capture_settings(const ConfigDocument& doc);

// "forward (backend) -> cpu (backend.inner)": each layer the open read.
std::string describe_stack(const ConfigNode& root);

}  // namespace lapse::detail
