#include "asymmetric_fence.hpp"

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace lapse::cpu::asymmetric_fence {

namespace {

#if defined(__linux__) && defined(SYS_membarrier)
bool membarrier(int command) noexcept { return syscall(SYS_membarrier, command, 0, 0) == 0; }
#endif

bool register_process() noexcept
{
#if defined(__linux__) && defined(SYS_membarrier)
    const long commands = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (commands < 0 || (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
    return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
#else
    return false;
#endif
}

}  // namespace

bool available() noexcept
{
    static const bool registered = register_process();
    return registered;
}

bool heavy() noexcept
{
    std::atomic_thread_fence(std::memory_order_seq_cst);
#if defined(__linux__) && defined(SYS_membarrier)
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return true;
    // Refused where the process is not registered: a child of fork(2)
    // whose parent was. Registered here, once more.
    return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
#else
    return false;
#endif
}

}  // namespace lapse::cpu::asymmetric_fence
