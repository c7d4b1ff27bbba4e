// Experiment (not part of the build): what a CPU window costs its caller
// when its records were freed by another thread (a capture's collector
// resolving named windows), and whether records handed back through a
// ring of the caller's own, fetched some windows ahead, cost what records
// the caller freed itself cost. docs/performance.md, "2026-12-06 (evening)"
// has the figures.
//
// The model is caller_without_locked_ops.cpp's (a caller, a worker that
// stamps runs of markers from the caller's own ring and spares its newest
// lines), with the window's close CAS kept (what a design with per-thread
// rings and record caches still does) and one more thread:
//   own     the caller resolves each batch itself (waits for the stamps,
//           bumps each record's generation, keeps the record): the pattern
//           of cpu_window_vs_two_rdtsc and of capture_named_vs_unnamed's
//           baseline;
//   ownlist the caller resolves each batch and pushes its records onto a
//           shared free list (a Treiber stack, one CAS a batch), and pops
//           one with a CAS a window: the CPU plugin's unnamed window today;
//   list    the same free list, but a collector thread resolves each batch
//           and pushes its records: the CPU plugin's named window today;
//   inbox   the collector writes the freed records' indices into a ring
//           that only this caller reads; the caller takes the next index
//           with plain loads and prefetches the record `ahead` windows on.
// The caller waits for the collector between batches (untimed), as the
// named-window bench waits for the capture to drain.
//
// Build and run (x86-64):
//   g++ -O2 -std=c++20 -pthread docs/experiments/records_from_another_thread.cpp -o /tmp/records_exp
//   /tmp/records_exp own|ownlist|list|inbox [ahead]
#include <x86intrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <time.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kBatch = 1024;
constexpr uint32_t kRecords = 1 << 14;
constexpr uint32_t kRing = 4096;   // marker cells of the caller's ring
constexpr uint64_t kSpared = 64;   // cells (four lines) left to a pushing caller
constexpr uint64_t kLine = 16;     // 4-byte cells a line
constexpr uint32_t kMaxRun = 256;  // markers stamped with one reading at most
constexpr int kPausesWhileHeld = 512;

enum class Source { own, own_list, list, inbox };

struct alignas(32) Record {
    std::atomic<uint64_t> word{0};  // generation << 32 | state (1 open, 2 closed)
    std::atomic<int64_t> start{0};
    std::atomic<int64_t> end{0};    // 0 until the end marker is stamped
    std::atomic<uint32_t> next{0};  // free-list link (index + 1, 0 = end)
};

struct Ring {
    alignas(64) std::atomic<uint64_t> head{0};
    alignas(64) uint64_t seen_head = 0;
    alignas(64) std::atomic<uint32_t> cells[kRing];
};

// Indices the collector hands back to the caller (inbox mode): one writer,
// one reader, the tail published once a batch.
struct Inbox {
    alignas(64) std::atomic<uint64_t> tail{0};
    alignas(64) uint64_t head = 0;
    uint64_t seen_tail = 0;
    alignas(64) uint32_t slots[kRecords];
};

Source g_source = Source::own;
uint32_t g_ahead = 0;
std::vector<Record> g_records(kRecords);
alignas(64) std::atomic<uint64_t> g_free_head{0};  // list mode: {ABA : 32, index + 1 : 32}
Inbox g_inbox;
std::atomic<bool> g_stop{false};
// The batch handed to the collector, and its answer.
alignas(64) std::atomic<const uint64_t*> g_batch{nullptr};
alignas(64) std::atomic<bool> g_batch_done{false};

int64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void push_chain(uint32_t first, uint32_t last)  // indices, linked first -> ... -> last
{
    uint64_t h = g_free_head.load(std::memory_order_relaxed);
    for (;;) {
        g_records[last].next.store(static_cast<uint32_t>(h), std::memory_order_relaxed);
        const uint64_t desired = (((h >> 32) + 1) << 32) | (first + 1);
        if (g_free_head.compare_exchange_weak(h, desired, std::memory_order_release, std::memory_order_relaxed)) return;
    }
}

struct Caller {
    Ring* ring;
    std::vector<uint32_t> own_free;  // own mode: the caller's cache
    uint64_t tail = 0;

    uint32_t take_record()
    {
        switch (g_source) {
        case Source::own: {
            const uint32_t index = own_free.back();
            own_free.pop_back();
            if (g_ahead != 0 && own_free.size() > g_ahead)
                __builtin_prefetch(&g_records[own_free[own_free.size() - 1 - g_ahead]], 1);
            return index;
        }
        case Source::own_list:
        case Source::list: {
            uint64_t h = g_free_head.load(std::memory_order_acquire);
            for (;;) {
                if (static_cast<uint32_t>(h) == 0) std::abort();  // sized so it never runs dry
                const uint32_t top = static_cast<uint32_t>(h) - 1;
                const uint32_t next = g_records[top].next.load(std::memory_order_relaxed);
                const uint64_t desired = (((h >> 32) + 1) << 32) | next;
                if (g_free_head.compare_exchange_weak(h, desired, std::memory_order_acquire)) {
                    if (g_ahead != 0 && next != 0) __builtin_prefetch(&g_records[next - 1], 1);
                    return top;
                }
            }
        }
        case Source::inbox: {
            Inbox& in = g_inbox;
            if (in.head == in.seen_tail) in.seen_tail = in.tail.load(std::memory_order_acquire);
            if (in.head == in.seen_tail) std::abort();  // sized so it never runs dry
            const uint32_t index = in.slots[in.head % kRecords];
            ++in.head;
            if (g_ahead != 0 && in.head + g_ahead < in.seen_tail)
                __builtin_prefetch(&g_records[in.slots[(in.head + g_ahead) % kRecords]], 1);
            return index;
        }
        }
        std::abort();
    }

    [[gnu::noinline]] uint64_t start()
    {
        const uint32_t index = take_record();
        Record& r = g_records[index];
        const uint64_t gen = r.word.load(std::memory_order_relaxed) >> 32;
        r.end.store(0, std::memory_order_relaxed);
        r.word.store(gen << 32 | 1, std::memory_order_relaxed);
        push(index * 2 + 1);
        return gen << 32 | index;
    }

    [[gnu::noinline]] bool end(uint64_t id)
    {
        Record& r = g_records[static_cast<uint32_t>(id)];
        uint64_t w = r.word.load(std::memory_order_relaxed);
        if (w != ((id >> 32) << 32 | 1)) return false;
        if (!r.word.compare_exchange_strong(w, w + 1)) return false;  // the close CAS stays
        push(static_cast<uint32_t>(id) * 2 + 2);
        return true;
    }

    void push(uint32_t cell)
    {
        while (tail - ring->seen_head >= kRing) ring->seen_head = ring->head.load(std::memory_order_acquire);
        ring->cells[tail % kRing].store(cell, std::memory_order_release);
        ++tail;
    }
};

void stamper(Ring* ring)
{
    uint64_t head = 0;
    uint64_t last_end = 0;
    while (!g_stop.load(std::memory_order_relaxed)) {
        uint64_t end = head;
        while (end - head < kMaxRun && ring->cells[end % kRing].load(std::memory_order_acquire) != 0) ++end;
        if (end == head) {
            _mm_pause();
            continue;
        }
        const bool pushing = end != last_end && end - head > kLine;
        last_end = end;
        uint64_t upto = end;
        if (pushing) upto = end >= kSpared ? (end - kSpared) & ~(kLine - 1) : 0;
        if (upto > head) {
            const int64_t t = now_ns();
            for (; head != upto; ++head) {
                const uint32_t cell = ring->cells[head % kRing].load(std::memory_order_relaxed) - 1;
                ring->cells[head % kRing].store(0, std::memory_order_relaxed);
                Record& r = g_records[cell / 2];
                if (cell & 1)
                    r.end.store(t, std::memory_order_release);
                else
                    r.start.store(t, std::memory_order_relaxed);
            }
            ring->head.store(head, std::memory_order_release);
        }
        if (pushing)
            for (int i = 0; i < kPausesWhileHeld; ++i) _mm_pause();
    }
}

// Waits for a window's end stamp and frees its record's generation.
void retire(uint64_t id)
{
    Record& r = g_records[static_cast<uint32_t>(id)];
    while (r.end.load(std::memory_order_acquire) == 0) std::this_thread::yield();
    r.word.store(((id >> 32) + 1) << 32, std::memory_order_relaxed);
}

void collector()
{
    while (!g_stop.load(std::memory_order_relaxed)) {
        const uint64_t* ids = g_batch.exchange(nullptr, std::memory_order_acquire);
        if (ids == nullptr) {
            std::this_thread::sleep_for(std::chrono::microseconds(50));
            continue;
        }
        for (uint32_t i = 0; i < kBatch; ++i) {
            retire(ids[i]);
            const uint32_t index = static_cast<uint32_t>(ids[i]);
            if (g_source == Source::list) {
                if (i + 1 < kBatch) g_records[index].next.store(static_cast<uint32_t>(ids[i + 1]) + 1, std::memory_order_relaxed);
            } else {
                g_inbox.slots[(g_inbox.tail.load(std::memory_order_relaxed) + i) % kRecords] = index;
            }
        }
        if (g_source == Source::list)
            push_chain(static_cast<uint32_t>(ids[0]), static_cast<uint32_t>(ids[kBatch - 1]));
        else
            g_inbox.tail.store(g_inbox.tail.load(std::memory_order_relaxed) + kBatch, std::memory_order_release);
        g_batch_done.store(true, std::memory_order_release);
    }
}

double median(std::vector<double>& v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv)
{
    const char* mode = argc > 1 ? argv[1] : "own";
    if (std::strcmp(mode, "own") == 0)
        g_source = Source::own;
    else if (std::strcmp(mode, "ownlist") == 0)
        g_source = Source::own_list;
    else if (std::strcmp(mode, "list") == 0)
        g_source = Source::list;
    else if (std::strcmp(mode, "inbox") == 0)
        g_source = Source::inbox;
    else {
        std::fprintf(stderr, "usage: %s own|ownlist|list|inbox [ahead]\n", argv[0]);
        return 2;
    }
    if (argc > 2) g_ahead = static_cast<uint32_t>(std::atoi(argv[2]));

    auto* ring = new Ring;
    Caller caller{ring, {}};
    // Every record starts free, wherever this mode keeps free records.
    for (uint32_t i = kRecords; i-- > 0;) caller.own_free.push_back(i);
    for (uint32_t i = 0; i + 1 < kRecords; ++i) g_records[i].next.store(i + 2, std::memory_order_relaxed);
    g_free_head.store(1, std::memory_order_relaxed);
    for (uint32_t i = 0; i < kRecords; ++i) g_inbox.slots[i] = i;
    g_inbox.tail.store(kRecords, std::memory_order_relaxed);

    std::thread worker(stamper, ring);
    std::thread resolver;
    if (g_source == Source::list || g_source == Source::inbox) resolver = std::thread(collector);

    std::vector<uint64_t> ids(kBatch);
    for (int round = 0; round < 3; ++round) {
        std::vector<double> rdtsc_ns, window_ns;
        for (int batch = 0; batch < 2000; ++batch) {
            const auto t0 = Clock::now();
            for (uint32_t i = 0; i < kBatch; ++i) {
                const uint64_t a = __rdtsc();
                const uint64_t b = __rdtsc();
                asm volatile("" : : "r"(a), "r"(b));
            }
            const auto t1 = Clock::now();
            for (uint32_t i = 0; i < kBatch; ++i) {
                ids[i] = caller.start();
                if (!caller.end(ids[i])) std::abort();
            }
            const auto t2 = Clock::now();
            rdtsc_ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kBatch);
            window_ns.push_back(std::chrono::duration<double, std::nano>(t2 - t1).count() / kBatch);
            if (g_source == Source::own) {
                for (uint32_t i = 0; i < kBatch; ++i) {
                    retire(ids[i]);
                    caller.own_free.push_back(static_cast<uint32_t>(ids[i]));
                }
                continue;
            }
            if (g_source == Source::own_list) {
                for (uint32_t i = 0; i < kBatch; ++i) {
                    retire(ids[i]);
                    if (i + 1 < kBatch)
                        g_records[static_cast<uint32_t>(ids[i])].next.store(static_cast<uint32_t>(ids[i + 1]) + 1,
                                                                            std::memory_order_relaxed);
                }
                push_chain(static_cast<uint32_t>(ids[0]), static_cast<uint32_t>(ids[kBatch - 1]));
                continue;
            }
            g_batch_done.store(false, std::memory_order_relaxed);
            g_batch.store(ids.data(), std::memory_order_release);
            while (!g_batch_done.load(std::memory_order_acquire)) std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
        const double r = median(rdtsc_ns), w = median(window_ns);
        std::printf("%s, %u ahead: two rdtsc %.1f ns, window %.1f ns, %.2fx\n", mode, g_ahead, r, w, w / r);
    }
    g_stop = true;
    worker.join();
    if (resolver.joinable()) resolver.join();
}
