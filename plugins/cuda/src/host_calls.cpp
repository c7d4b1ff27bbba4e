#include "host_calls.hpp"

#include <dlfcn.h>

#include <vector>

namespace lapse::cuda {

enum : int { kPending = 0, kRunning = 1, kDone = 2 };

struct HostCalls::Call {
    lapse_work_fn fn;
    void* user;
    CUstream native;
    lapse_stream stream;
    HostCalls* owner;
    std::atomic<int> state{kPending};
    Call* prev = nullptr;
    Call* next = nullptr;
};

namespace {

void unlink(HostCalls::Call*& head, HostCalls::Call* c) noexcept
{
    if (c->prev != nullptr) c->prev->next = c->next;
    else head = c->next;
    if (c->next != nullptr) c->next->prev = c->prev;
    c->prev = c->next = nullptr;
}

void push(HostCalls::Call*& head, HostCalls::Call* c) noexcept
{
    c->prev = nullptr;
    c->next = head;
    if (head != nullptr) head->prev = c;
    head = c;
}

}  // namespace

HostCalls::~HostCalls()
{
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [this] { return head_ == nullptr; });
    while (retired_ != nullptr) {
        Call* c = retired_;
        unlink(retired_, c);
        delete c;
    }
}

HostCalls::Call* HostCalls::add(lapse_work_fn fn, void* user, CUstream native, lapse_stream stream)
{
    auto* c = new Call{fn, user, native, stream, this};
    std::lock_guard<std::mutex> lock(mutex_);
    push(head_, c);
    ++pending_;
    return c;
}

void HostCalls::cancel(Call* c) noexcept
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        unlink(head_, c);
        --pending_;
    }
    idle_.notify_all();
    delete c;
}

void CUDA_CB HostCalls::trampoline(void* data)
{
    auto* c = static_cast<Call*>(data);
    int expected = kPending;
    // Lost: the plugin ran it already (the driver said it never would).
    if (!c->state.compare_exchange_strong(expected, kRunning, std::memory_order_acq_rel)) return;
    c->fn(c->user, c->native);
    c->owner->finished(c);
}

void HostCalls::finished(Call* c) noexcept
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        unlink(head_, c);
        --pending_;
        delete c;
    }
    idle_.notify_all();
}

bool HostCalls::pending_on(lapse_stream stream) const noexcept
{
    std::lock_guard<std::mutex> lock(mutex_);
    for (Call* c = head_; c != nullptr; c = c->next)
        if (c->stream == stream) return true;
    return false;
}

std::size_t HostCalls::pending() const noexcept
{
    std::lock_guard<std::mutex> lock(mutex_);
    return pending_;
}

std::size_t HostCalls::run_orphans(lapse_stream stream) noexcept
{
    std::vector<Call*> mine;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (Call* c = head_; c != nullptr; c = c->next) {
            if (stream != LAPSE_ALL_STREAMS && c->stream != stream) continue;
            int expected = kPending;
            if (c->state.compare_exchange_strong(expected, kRunning, std::memory_order_acq_rel)) {
                try {
                    mine.push_back(c);
                } catch (...) {
                    c->state.store(kPending, std::memory_order_release);  // left for a later try
                    break;
                }
            }
        }
    }
    for (Call* c : mine) c->fn(c->user, c->native);
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (Call* c : mine) {
            c->state.store(kDone, std::memory_order_release);
            unlink(head_, c);
            --pending_;
            // Kept, not freed: should the driver still call trampoline on
            // it, the state word tells it the call has run.
            push(retired_, c);
        }
    }
    idle_.notify_all();
    return mine.size();
}

void HostCalls::pin_plugin_in_memory() noexcept
{
    static std::once_flag once;
    std::call_once(once, [] {
        Dl_info info{};
        if (dladdr(reinterpret_cast<void*>(&HostCalls::trampoline), &info) == 0 || info.dli_fname == nullptr) return;
        // One more reference that is never closed, and NODELETE: dlclose of
        // the host's handle leaves the code mapped.
        dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    });
}

}  // namespace lapse::cuda
