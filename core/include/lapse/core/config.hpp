// lapse core — a parsed config (TOML).
//
//   [lapse]                      # or [plugins]; optional
//   search_paths = ["plugins"]   # absolute, or relative to this file's folder
//   allow_insecure = false       # load plugin files others may write to
//
//   [backend]
//   plugin = "forward"           # a name (lapse_<name>.so on the search path) or a path
//   sha256 = "..."               # optional: refuse the file unless it hashes to this
//   [backend.inner]              # a stacking plugin's child (the plugin reads its key)
//   plugin = "cpu"
//   streams = 2
//
// Relative paths are resolved against the config's base folder (the file's
// folder), never the working directory. Parse errors throw Error
// (LAPSE_ERROR_CONFIG) with "<file>:<line>:<col>: <cause>". Keys a plugin
// does not read are refused when the device opens (Runtime::open).
#pragma once

#include <lapse/core/export.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace lapse {

namespace detail {
struct ConfigDocument;
}

class LAPSE_CORE_API Config {
public:
    // Reads and parses a file; its folder is the base for relative paths.
    static Config from_file(const std::filesystem::path& file);
    // Parses `text`; `source_name` stands for the file name in messages and
    // `base_dir` resolves relative paths.
    static Config from_string(std::string_view text, std::string source_name, std::filesystem::path base_dir);
    // The embedded default: the CPU plugin with 2 streams.
    static Config builtin();
    static std::string_view builtin_text() noexcept;

    const std::string& source_name() const noexcept;
    const std::filesystem::path& base_dir() const noexcept;
    // The [backend] table's `plugin` value, "" when absent.
    std::string backend_plugin() const;

    const detail::ConfigDocument& document() const noexcept { return *doc_; }

private:
    explicit Config(std::shared_ptr<const detail::ConfigDocument> doc) noexcept : doc_(std::move(doc)) {}
    std::shared_ptr<const detail::ConfigDocument> doc_;
};

}  // namespace lapse
