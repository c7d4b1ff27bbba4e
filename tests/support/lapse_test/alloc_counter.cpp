// Replaced global operator new/delete that count live bytes and blocks.
// Every block carries a header with its size and the header's own size (so
// over-aligned allocations free correctly); all forms of new and delete are
// replaced together so that no block crosses from one scheme to the other.
#include "alloc_counter.hpp"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {

std::atomic<int64_t> live_bytes{0};
std::atomic<int64_t> live_blocks{0};
std::atomic<int64_t> total_allocations{0};
std::atomic<int64_t> peak_bytes{0};

struct Header {
    std::size_t size;
    std::size_t offset;  // from the start of the malloc'ed block to the user pointer
};

void* allocate(std::size_t size, std::size_t align) noexcept
{
    if (align < alignof(std::max_align_t)) align = alignof(std::max_align_t);
    std::size_t offset = sizeof(Header) <= align ? align : ((sizeof(Header) + align - 1) / align) * align;
    void* base = nullptr;
    if (::posix_memalign(&base, align, offset + (size == 0 ? 1 : size)) != 0) return nullptr;
    auto* user = static_cast<unsigned char*>(base) + offset;
    auto* h = reinterpret_cast<Header*>(user - sizeof(Header));
    h->size = size;
    h->offset = offset;
    const int64_t now = live_bytes.fetch_add(static_cast<int64_t>(size), std::memory_order_relaxed) + static_cast<int64_t>(size);
    int64_t peak = peak_bytes.load(std::memory_order_relaxed);
    while (now > peak && !peak_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    live_blocks.fetch_add(1, std::memory_order_relaxed);
    total_allocations.fetch_add(1, std::memory_order_relaxed);
    return user;
}

void release(void* p) noexcept
{
    if (p == nullptr) return;
    auto* user = static_cast<unsigned char*>(p);
    auto* h = reinterpret_cast<Header*>(user - sizeof(Header));
    live_bytes.fetch_sub(static_cast<int64_t>(h->size), std::memory_order_relaxed);
    live_blocks.fetch_sub(1, std::memory_order_relaxed);
    std::free(user - h->offset);
}

void* allocate_or_throw(std::size_t size, std::size_t align)
{
    void* p = allocate(size, align);
    if (p == nullptr) throw std::bad_alloc();
    return p;
}

}  // namespace

namespace lapse_test {

AllocStats alloc_stats() noexcept
{
    return {live_bytes.load(), live_blocks.load(), total_allocations.load(), peak_bytes.load()};
}

void reset_peak() noexcept { peak_bytes.store(live_bytes.load()); }

bool counting_allocations() noexcept
{
    const int64_t before = total_allocations.load();
    int* volatile probe = new int(1);  // volatile: a new/delete pair may be elided
    delete probe;
    return total_allocations.load() > before;
}

}  // namespace lapse_test

void* operator new(std::size_t n) { return allocate_or_throw(n, 0); }
void* operator new[](std::size_t n) { return allocate_or_throw(n, 0); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return allocate_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return allocate_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept
{
    return allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept
{
    return allocate(n, static_cast<std::size_t>(a));
}

void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
