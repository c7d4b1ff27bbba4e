// Internal: the drop-in environment variables, read once per Runtime.
//   LAPSE_CONFIG=file.toml   the config Runtime::open_default opens
//   LAPSE_CAPTURE=path       every named window of every device the runtime opens, into `path`
//   LAPSE_CAPTURE_BUDGET=8MiB    that capture's memory budget (B, KiB, MiB, GiB; 64 KiB to 1 TiB)
//   LAPSE_CAPTURE_POLICY=drop    past the budget: drop (count) or block
//   LAPSE_CAPTURE_FLUSH_MS=100   at most this long between chunk writes (1 to 100)
//   LAPSE_DISABLE=1          every window a no-op: no plugin is loaded, nothing opens
// A bad value throws Error (LAPSE_ERROR_CONFIG) naming the variable, its
// value and the cause, from the Runtime constructor.
#pragma once

#include "../backend_open.hpp"

#include <lapse/core/capture.hpp>

#include <memory>
#include <string>

namespace lapse::detail {

struct Environment {
    std::string config;   // LAPSE_CONFIG, "" when unset
    std::string capture;  // LAPSE_CAPTURE, "" when unset
    CaptureOptions capture_options;  // the LAPSE_CAPTURE_* settings (path unset)
    bool disabled = false;
};

Environment read_environment();

// The parsers behind LAPSE_CAPTURE_BUDGET and LAPSE_CAPTURE_POLICY: the
// bytes of "8MiB", "8 MiB", "512 KiB" or "4194304"; "drop" or "block".
// Throw Error (LAPSE_ERROR_CONFIG) naming `what` and the cause.
uint64_t parse_capture_budget(const std::string& text, const std::string& what);
CapturePolicy parse_capture_policy(const std::string& text, const std::string& what);

// LAPSE_CAPTURE's capture for `path`: one per path for the whole process,
// so every Runtime a host makes records into the same file (a second open
// would truncate the first's windows). Closed (its end chunk written) at
// exit.
// The first call for a path decides its options (`options`, path aside).
std::shared_ptr<Capture> environment_capture(const std::string& path, CaptureOptions options = {});

// The backend of a disabled runtime: a built-in plugin whose windows do
// nothing (start and end return at once, resolve says not measured) and
// whose streams run submitted work inline, so a host runs unchanged.
OpenedBackend open_disabled_backend();

}  // namespace lapse::detail
