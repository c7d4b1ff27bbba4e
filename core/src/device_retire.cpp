// Closing a device without freeing what Windows and Durations point at:
// see device_core.hpp ("Closing does not free it").
#include "device_core.hpp"

#include "runtime_state.hpp"

#include <lapse/core/session.hpp>

#include <mutex>
#include <vector>

namespace lapse::detail {

namespace {
// The closed shells, for the life of the process: reachable (so leak
// checkers see no leak) and never destroyed (so a Duration destroyed by a
// static destructor after this list still finds its shell).
std::mutex& retired_mutex() noexcept
{
    static std::mutex* m = new std::mutex;
    return *m;
}
std::vector<DeviceCore*>& retired_cores() noexcept
{
    static auto* cores = new std::vector<DeviceCore*>;
    return *cores;
}
}  // namespace

void DeviceCore::shut_down() noexcept
{
    // Its windows go into the capture while the plugin can still resolve
    // them; then the shell lets go of every capture it kept alive, so a
    // capture nobody else holds closes (a shell lives for the process).
    detach_capture();
    {
        std::lock_guard lock(capture_mutex);
        captures_kept.clear();
    }
    closed = true;
    windows = lapse_window_dispatch{};
    close_opened(backend);  // the plugin's device, then its file
    plugin = nullptr;
    device = nullptr;
    info = DeviceInfo{};
    {
        std::lock_guard lock(info_mutex_);
        info_now_.store(nullptr, std::memory_order_release);
        info_answers_.clear();
    }
    runtime.reset();
    {
        std::lock_guard lock(session_mutex);
        session.reset();
    }
    std::lock_guard lock(work_mutex_);
    work_error_ = nullptr;
    has_work_error_.store(false, std::memory_order_relaxed);
}

void DeviceCore::retire(std::unique_ptr<DeviceCore> core) noexcept
{
    if (!core) return;
    core->shut_down();
    try {
        std::lock_guard lock(retired_mutex());
        retired_cores().push_back(core.get());
        core.release();
    } catch (...) {
        // Out of memory for one pointer: the shell stays reachable from
        // nowhere, which is a leak and never a dangling pointer.
        (void)core.release();
    }
}

}  // namespace lapse::detail
