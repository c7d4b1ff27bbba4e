// Internal: one loaded plugin file, its per-file lapse_host and its checked
// descriptor. Files are shared process-wide (one load per file, keyed on
// the canonical path) and unloaded when the last reference goes: each
// device opened from the file and each PluginLibrary handle holds one.
#pragma once

#include <lapse/lapse.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

namespace spdlog {
class logger;
}

namespace lapse::detail {

class LoadedLibrary {
public:
    // Loads `file` (already resolved and checked, absolute) or returns the
    // instance already loaded. Throws Error(LAPSE_ERROR_LOAD) naming the
    // file and the cause. `logger` receives this file's plugin logs.
    static std::shared_ptr<LoadedLibrary> load(const std::filesystem::path& file,
                                               std::shared_ptr<spdlog::logger> logger);

    ~LoadedLibrary();
    LoadedLibrary(const LoadedLibrary&) = delete;
    LoadedLibrary& operator=(const LoadedLibrary&) = delete;

    const std::filesystem::path& path() const noexcept { return path_; }
    const lapse_plugin& descriptor() const noexcept { return *descriptor_; }
    const lapse_host* host() const noexcept { return &host_; }
    // The descriptor's name once known, the file name before.
    const std::string& name() const noexcept { return name_; }
    spdlog::logger* logger() const noexcept { return logger_.get(); }

    // For the host's log service.
    void log(lapse_log_level level, const char* message) noexcept;

    static LoadedLibrary* from_host(const lapse_host* host) noexcept
    {
        return host != nullptr ? static_cast<LoadedLibrary*>(host->host_data) : nullptr;
    }

private:
    struct Handle;  // the Boost.DLL library, hidden here
    LoadedLibrary(std::filesystem::path path, std::shared_ptr<spdlog::logger> logger);
    void load_and_negotiate();

    std::filesystem::path path_;
    std::shared_ptr<spdlog::logger> logger_;
    std::unique_ptr<Handle> handle_;
    lapse_host host_{};
    const lapse_plugin* descriptor_ = nullptr;
    std::string name_;

    // While the entry runs, the last error it logged explains a refusal.
    std::mutex entry_mutex_;
    bool in_entry_ = false;
    std::string entry_last_error_;
};

// Fills the host services every lapse_host carries (defined in host_services.cpp).
void fill_host_services(lapse_host& host) noexcept;

}  // namespace lapse::detail
