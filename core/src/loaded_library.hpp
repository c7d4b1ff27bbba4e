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

struct PinnedHash;

class LoadedLibrary {
public:
    // Loads `file` (already resolved and checked, absolute) or returns the
    // instance already loaded. Throws Error(LAPSE_ERROR_LOAD) naming the
    // file and the cause. `logger` receives this file's plugin logs.
    //
    // The file is opened once; a `pin` is checked against the content of
    // that open descriptor, and that same descriptor is what the dynamic
    // loader maps (/proc/self/fd/N), so renaming another file into place
    // between the hash and the load changes nothing. Files are keyed on
    // their device and inode, not their name.
    static std::shared_ptr<LoadedLibrary> load(const std::filesystem::path& file,
                                               std::shared_ptr<spdlog::logger> logger,
                                               const PinnedHash* pin = nullptr);

    ~LoadedLibrary();
    LoadedLibrary(const LoadedLibrary&) = delete;
    LoadedLibrary& operator=(const LoadedLibrary&) = delete;

    const std::filesystem::path& path() const noexcept { return path_; }
    const lapse_plugin& descriptor() const noexcept { return *descriptor_; }
    const lapse_host* host() const noexcept { return &host_; }
    // The descriptor's name once known, the file name before.
    const std::string& name() const noexcept { return name_; }
    // The descriptor's version and description, read within their bounds.
    const std::string& version() const noexcept { return version_; }
    const std::string& description() const noexcept { return description_; }
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
    void load_and_negotiate(int fd);

    std::filesystem::path path_;
    std::shared_ptr<spdlog::logger> logger_;
    std::unique_ptr<Handle> handle_;
    // The descriptor the file was hashed through and loaded from
    // (/proc/self/fd/N). Kept open while the file is loaded: the dynamic
    // loader knows the object by that name and would hand it out again for
    // another file opened under the same number.
    int fd_ = -1;
    lapse_host host_{};
    const lapse_plugin* descriptor_ = nullptr;
    std::string name_;
    std::string version_;
    std::string description_;

    // While the entry runs, the last error it logged explains a refusal.
    std::mutex entry_mutex_;
    bool in_entry_ = false;
    std::string entry_last_error_;
};

// Fills the host services every lapse_host carries (defined in host_services.cpp).
void fill_host_services(lapse_host& host) noexcept;

}  // namespace lapse::detail
