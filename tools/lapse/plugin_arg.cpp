#include "plugin_arg.hpp"

#include <filesystem>

namespace lapse::cli {

std::string plugin_argument(const std::string& arg)
{
    const bool is_path = arg.find('/') != std::string::npos ||
                         (arg.size() > 3 && arg.compare(arg.size() - 3, 3, ".so") == 0);
    if (!is_path) return arg;
    // The core resolves relative paths against a config's folder, never the
    // working directory; on the command line the working directory is what
    // the user meant, so make it absolute here.
    std::error_code ec;
    std::filesystem::path p = std::filesystem::absolute(arg, ec);
    return ec ? arg : p.lexically_normal().string();
}

}  // namespace lapse::cli
