// Internal: the drop-in environment variables, read once per Runtime.
//   LAPSE_CONFIG=file.toml   the config Runtime::open_default opens
//   LAPSE_CAPTURE=path       every named window of every device the runtime opens, into `path`
//   LAPSE_DISABLE=1          every window a no-op: no plugin is loaded, nothing opens
#pragma once

#include "../backend_open.hpp"

#include <lapse/core/capture.hpp>

#include <memory>
#include <string>

namespace lapse::detail {

struct Environment {
    std::string config;   // LAPSE_CONFIG, "" when unset
    std::string capture;  // LAPSE_CAPTURE, "" when unset
    bool disabled = false;
};

Environment read_environment();

// LAPSE_CAPTURE's capture for `path`: one per path for the whole process,
// so every Runtime a host makes records into the same file (a second open
// would truncate the first's windows). Closed (its end chunk written) at
// exit.
std::shared_ptr<Capture> environment_capture(const std::string& path);

// The backend of a disabled runtime: a built-in plugin whose windows do
// nothing (start and end return at once, resolve says not measured) and
// whose streams run submitted work inline, so a host runs unchanged.
OpenedBackend open_disabled_backend();

}  // namespace lapse::detail
