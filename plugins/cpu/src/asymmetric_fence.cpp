#include "asymmetric_fence.hpp"


#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace lapse::cpu::asymmetric_fence {

namespace {

bool register_process() noexcept
{
#if defined(__linux__) && defined(SYS_membarrier)
    const long commands = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (commands < 0 || (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
    return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
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

void heavy() noexcept
{
#if defined(__linux__) && defined(SYS_membarrier)
    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
#endif
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace lapse::cpu::asymmetric_fence
