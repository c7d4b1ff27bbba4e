// lapse core — plugin files: finding, loading and inspecting them.
//
// A plugin name resolves to lapse_<name>.so on the search path; a value
// that contains '/' or ends in ".so" is a path. The search path is, in
// order: LAPSE_PLUGIN_PATH (colon separated, absolute entries), the
// Runtime's extra paths, the config's search_paths, and the lapse/ folder
// beside the core library itself (so a build tree and an installed prefix
// both work with no configuration).
//
// A loaded file stays loaded while any PluginLibrary handle or any device
// opened from it is alive (one reference per use).
#pragma once

#include <lapse/core/export.hpp>
#include <lapse/plugin.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace lapse {

namespace detail {
class LoadedLibrary;
}

// A loaded plugin file and its checked descriptor (for `lapse info`).
class LAPSE_CORE_API PluginLibrary {
public:
    PluginLibrary() noexcept = default;
    explicit operator bool() const noexcept { return lib_ != nullptr; }

    const std::filesystem::path& path() const;
    // The checked descriptor (major, struct_size, required functions).
    // Its strings are the plugin's memory: read them through the accessors
    // below, which the core copied within bounds when the file was loaded.
    const lapse_plugin& descriptor() const;
    const std::string& name() const;
    const std::string& version() const;         // "" when the descriptor has none
    const std::string& description() const;     // at most 1024 bytes

private:
    friend class Runtime;
    explicit PluginLibrary(std::shared_ptr<detail::LoadedLibrary> lib) noexcept : lib_(std::move(lib)) {}
    std::shared_ptr<detail::LoadedLibrary> lib_;
};

struct ExportedSymbol {
    std::string name;
    bool function = false;  // STT_FUNC (else data or other)
};

// The symbols a shared object exports (defined, global or weak, visible),
// read from its ELF .dynsym without loading it. A lapse plugin should
// export lapse_plugin_entry_v1 and nothing else. Throws Error
// (LAPSE_ERROR_LOAD) naming the file when it is not a readable ELF file.
LAPSE_CORE_API std::vector<ExportedSymbol> exported_symbols(const std::filesystem::path& file);

// SHA-256 of a file as 64 lowercase hex digits. Throws Error naming the file.
LAPSE_CORE_API std::string sha256_file(const std::filesystem::path& file);

// The lapse/ folder beside the core library.
LAPSE_CORE_API std::filesystem::path default_plugin_dir();

// Human-readable capability bits: "device-clock nested overlapping ...".
LAPSE_CORE_API std::string capability_names(uint64_t capabilities);

}  // namespace lapse
