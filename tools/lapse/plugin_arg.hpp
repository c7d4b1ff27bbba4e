// How the PLUGIN argument of `lapse info` / `lapse validate` is read: a path
// when it contains '/' or ends in ".so" (relative to the working directory,
// since the user typed it there), otherwise a name on the plugin search
// path (lapse_<name>.so).
#pragma once

#include <string>

namespace lapse::cli {

// The argument to hand to Runtime::load_plugin / find_plugin.
std::string plugin_argument(const std::string& arg);

}  // namespace lapse::cli
