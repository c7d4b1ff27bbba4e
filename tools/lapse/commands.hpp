// The subcommands of `lapse`, one file each. A new subcommand adds its
// file to CMakeLists.txt, declares its add_* function here and calls it in
// main.cpp.
#pragma once

namespace CLI {
class App;
}

namespace lapse::tool {

// Exit codes shared by the subcommands. A subcommand's callback prints why
// it failed and throws CLI::RuntimeError(code).
enum ExitCode : int {
    exit_ok = 0,
    exit_failure = 1,          // the run went wrong (a device error, a file not written)
    exit_backend_unusable = 2  // the backend could not be opened: unavailable, refused, bad config
};

// `lapse run [--config FILE] [--session FILE]`
void add_run_command(CLI::App& app);

}  // namespace lapse::tool
