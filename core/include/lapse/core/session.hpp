// lapse core — a session: the named windows of a run, saved and loaded.
//
// A Device attached with record_into(session) adds one WindowRecord per
// named window when its duration reaches a final state. A session file is
// a header line with the SHA-256 of what follows, then a Boost.Serialization
// text archive (versioned classes); docs/hardening.md describes it. Loading
// checks the checksum before it parses, then parses with bounds: counts and
// string sizes are checked before anything is allocated for them. A damaged
// file fails with an Error naming it and the cause.
//
// Thread safety: add() and windows() may be called from any thread.
#pragma once

#include <lapse/core/duration.hpp>
#include <lapse/core/export.hpp>
#include <lapse/status.h>

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace lapse {

struct WindowRecord {
    std::string name;
    uint64_t thread = 0;  // OS thread id of the thread that opened the window
    Stream stream = 0;
    TimingMethod method = TimingMethod::none;
    DurationState state = DurationState::not_measured;
    int64_t start_ns = 0;  // valid when state == ready
    int64_t end_ns = 0;
    ClockDomain domain = ClockDomain::none;
    lapse_status failure = LAPSE_OK;  // when state == failed
    // LAPSE_DURATION_* flags of a ready window (lapse/window.h): work left
    // queued at close (with how many operations), earlier work held.
    uint32_t flags = 0;
    uint32_t queued_ops = 0;
    uint64_t close_thread = 0;  // the thread that closed it, when recorded (captures); 0 otherwise

    int64_t ns() const noexcept { return end_ns - start_ns; }
    bool operator==(const WindowRecord&) const = default;
};

struct BackendRecord {
    std::string plugin;          // top plugin's name
    std::string plugin_version;
    std::string device_name;
    uint32_t stream_count = 0;
    uint64_t capabilities = 0;
    bool operator==(const BackendRecord&) const = default;
};

class LAPSE_CORE_API Session {
public:
    // Limits on what load() accepts, so a hostile file cannot make it
    // allocate without bound.
    static constexpr uint64_t max_windows = 1u << 24;
    static constexpr uint32_t max_string = 4096;

    Session();
    Session(Session&&) noexcept;
    Session& operator=(Session&&) noexcept;
    ~Session();

    void set_backend(BackendRecord backend);
    BackendRecord backend() const;

    void add(WindowRecord record);
    std::vector<WindowRecord> windows() const;  // a copy, in the order added
    std::size_t size() const;

    // True when load() read a file written before session files carried a
    // checksum (format 1, lapse 0.1): it parsed, but damage to it cannot be
    // told from data. Saving writes the checksummed format. False for a
    // session built in memory.
    bool unverified() const noexcept;

    // Throw Error (LAPSE_ERROR_INVALID_ARGUMENT for a bad or damaged file,
    // naming the file and the cause: "checksum mismatch" for damage).
    void save(const std::filesystem::path& file) const;
    static Session load(const std::filesystem::path& file);
    // The same on streams; `source_name` names the stream in messages.
    void save(std::ostream& out) const;
    static Session load(std::istream& in, const std::string& source_name);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace lapse
