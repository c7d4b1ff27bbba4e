// lapse::Session: the named windows of a run, thread-safe to add to.
// The file format lives in session_file.cpp (header, checksum) and
// session_archive.cpp (the archive).
#include "session_archive.hpp"

#include <lapse/core/error.hpp>
#include <lapse/core/session.hpp>

#include <unistd.h>

#include <fstream>
#include <string>
#include <mutex>

namespace lapse {

struct Session::Impl {
    mutable std::mutex mutex;
    detail::SessionData data;
    bool unverified = false;  // loaded from a format-1 file (no checksum)
};

Session::Session() : impl_(std::make_unique<Impl>()) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

void Session::set_backend(BackendRecord backend)
{
    std::lock_guard lock(impl_->mutex);
    impl_->data.backend = std::move(backend);
}

BackendRecord Session::backend() const
{
    std::lock_guard lock(impl_->mutex);
    return impl_->data.backend;
}

void Session::add(WindowRecord record)
{
    std::lock_guard lock(impl_->mutex);
    impl_->data.windows.push_back(std::move(record));
}

std::vector<WindowRecord> Session::windows() const
{
    std::lock_guard lock(impl_->mutex);
    return impl_->data.windows;
}

std::size_t Session::size() const
{
    std::lock_guard lock(impl_->mutex);
    return impl_->data.windows.size();
}

bool Session::unverified() const noexcept
{
    return impl_->unverified;  // set once, by load, before the Session is handed out
}

void Session::save(std::ostream& out) const
{
    detail::SessionData copy;
    {
        std::lock_guard lock(impl_->mutex);
        copy = impl_->data;
    }
    detail::save_session(copy, out);
}

Session Session::load(std::istream& in, const std::string& source_name)
{
    Session s;
    detail::LoadedSession loaded = detail::load_session(in, source_name);
    s.impl_->data = std::move(loaded.data);
    s.impl_->unverified = !loaded.verified;
    return s;
}

void Session::save(const std::filesystem::path& file) const
{
    // Into a temporary file beside it, renamed over the old one only when
    // complete: a crash or a full disk during a save never loses the
    // previous file.
    std::filesystem::path temp = file;
    temp += ".tmp-" + std::to_string(::getpid());
    {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        if (!out) throw Error(LAPSE_ERROR_INVALID_ARGUMENT, file.string() + ": cannot write the session file");
        try {
            save(out);
        } catch (...) {
            std::error_code ec;
            std::filesystem::remove(temp, ec);
            throw;
        }
        out.flush();
        if (!out) {
            std::error_code ec;
            std::filesystem::remove(temp, ec);
            throw Error(LAPSE_ERROR_INVALID_ARGUMENT, file.string() + ": write failed");
        }
    }
    std::error_code ec;
    std::filesystem::rename(temp, file, ec);
    if (ec) {
        std::error_code ignored;
        std::filesystem::remove(temp, ignored);
        throw Error(LAPSE_ERROR_INVALID_ARGUMENT, file.string() + ": cannot replace the session file: " + ec.message());
    }
}

Session Session::load(const std::filesystem::path& file)
{
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Error(LAPSE_ERROR_INVALID_ARGUMENT, file.string() + ": cannot read the session file");
    return load(in, file.string());
}

}  // namespace lapse
