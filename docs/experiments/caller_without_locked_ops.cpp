// Experiment (not part of the build): what a CPU window would cost its
// caller if the window path did no locked read-modify-write, and what
// each of today's four locked operations adds back. docs/performance.md,
// "The caller's window without locked operations" (2026-12-05, night) has the
// figures and what they mean for the CPU plugin's design.
//
// The model is the CPU plugin's, reduced to its memory traffic:
//   * the caller takes a free record from a cache of its own (today: a CAS
//     on the stream's free list), writes the record's word, and pushes a
//     start marker; at the end it checks the record's word, marks it
//     closed (today: a CAS) and pushes an end marker;
//   * markers go to a ring of the caller's own (today: a CAS claims a cell
//     of the stream's shared ring), a cell written is a cell ready;
//   * a consumer thread (the stream's worker) takes the written cells in
//     runs, stamps each run's records with one CLOCK_MONOTONIC reading, and
//     leaves the four lines behind the caller's newest cell alone while the
//     caller is pushing (the plugin's spare-producer policy);
//   * after each batch of 1,024 windows the caller waits for the end
//     stamps, frees the records into its cache and bumps their generation.
// Each batch is timed beside 1,024 pairs of rdtsc reads, as
// `cpu_window_vs_two_rdtsc` is.
//
// Build and run (x86-64):
//   g++ -O2 -std=c++20 -pthread docs/experiments/caller_without_locked_ops.cpp -o /tmp/caller_exp
//   /tmp/caller_exp [locks] [worker|noworker]
// `locks` (default 0) puts today's locked operations back, as a mask:
//   1  start pops its record with a CAS
//   2  end closes the record with a CAS
//   4  each marker claims its cell with a CAS (two a window)
// so 7 is the plugin's count (four a window). `noworker` runs no consumer:
// the caller alone.
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
constexpr uint32_t kRing = 4096;       // cells of the caller's ring
constexpr uint64_t kSpared = 64;       // cells (four lines) left to a pushing caller
constexpr uint64_t kLine = 16;         // 4-byte cells a line
constexpr uint32_t kMaxRun = 256;      // markers stamped with one reading at most
constexpr int kPausesWhileHeld = 512;

struct alignas(32) Record {
    std::atomic<uint64_t> word{0};  // generation << 32 | state (1 open, 2 closed)
    std::atomic<int64_t> start{0};
    std::atomic<int64_t> end{0};    // 0 until the end marker is stamped
};

struct Ring {
    alignas(64) std::atomic<uint64_t> head{0};  // the consumer's: cells before it are free again
    alignas(64) uint64_t seen_head = 0;          // the producer's copy of head
    alignas(64) std::atomic<uint32_t> cells[kRing];  // index * 2 + (1 for an end) + 1; 0 = not written
};

int g_locks = 0;
alignas(64) std::atomic<uint64_t> g_free_head{0};  // stands for the stream's free list (locks & 1)
alignas(64) std::atomic<uint64_t> g_ring_tail{0};  // stands for the shared ring's tail (locks & 4)
std::atomic<bool> g_stop{false};

int64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

struct Caller {
    Ring* ring;
    std::vector<Record>* records;
    std::vector<uint32_t> free_ids;  // the caller's cache of free records
    uint64_t tail = 0;

    [[gnu::noinline]] uint64_t start()
    {
        if (g_locks & 1) {
            uint64_t h = g_free_head.load(std::memory_order_relaxed);
            g_free_head.compare_exchange_strong(h, h + 1);
        }
        const uint32_t index = free_ids.back();
        free_ids.pop_back();
        Record& r = (*records)[index];
        const uint64_t gen = r.word.load(std::memory_order_relaxed) >> 32;
        r.end.store(0, std::memory_order_relaxed);
        r.word.store(gen << 32 | 1, std::memory_order_relaxed);
        push(index * 2 + 1);
        return gen << 32 | index;
    }

    [[gnu::noinline]] bool end(uint64_t id)
    {
        const uint32_t index = static_cast<uint32_t>(id);
        Record& r = (*records)[index];
        uint64_t w = r.word.load(std::memory_order_relaxed);
        if (w != ((id >> 32) << 32 | 1)) return false;  // not this window, or not open
        if (g_locks & 2) {
            if (!r.word.compare_exchange_strong(w, w + 1)) return false;
        } else {
            r.word.store(w + 1, std::memory_order_relaxed);
        }
        push(index * 2 + 2);
        return true;
    }

    void push(uint32_t cell)
    {
        if (g_locks & 4) {
            uint64_t t = g_ring_tail.load(std::memory_order_relaxed);
            g_ring_tail.compare_exchange_strong(t, t + 1);
        }
        while (tail - ring->seen_head >= kRing) ring->seen_head = ring->head.load(std::memory_order_acquire);
        ring->cells[tail % kRing].store(cell, std::memory_order_release);
        ++tail;
    }
};

void consumer(Ring* ring, std::vector<Record>* records)
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
        // A run longer than a line whose end moved since the last look: the
        // caller is still pushing; take only whole lines kSpared behind.
        const bool pushing = end != last_end && end - head > kLine;
        last_end = end;
        uint64_t upto = end;
        if (pushing) upto = end >= kSpared ? (end - kSpared) & ~(kLine - 1) : 0;
        if (upto > head) {
            const int64_t t = now_ns();  // one reading for the run
            for (; head != upto; ++head) {
                const uint32_t cell = ring->cells[head % kRing].load(std::memory_order_relaxed) - 1;
                ring->cells[head % kRing].store(0, std::memory_order_relaxed);
                Record& r = (*records)[cell / 2];
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

double median(std::vector<double>& v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc > 1) g_locks = std::atoi(argv[1]);
    const bool worker = argc < 3 || std::strcmp(argv[2], "noworker") != 0;
    std::vector<Record> records(1 << 16);
    auto* ring = new Ring;
    Caller caller{ring, &records, {}};
    for (uint32_t i = static_cast<uint32_t>(records.size()); i-- > 0;) caller.free_ids.push_back(i);
    std::thread stamper;
    if (worker) stamper = std::thread(consumer, ring, &records);

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
            if (!worker) {  // nobody stamps: clear the ring as a consumer would have
                for (auto& c : ring->cells) c.store(0, std::memory_order_relaxed);
                ring->head.store(caller.tail, std::memory_order_release);
            }
            for (uint32_t i = 0; i < kBatch; ++i) {  // resolve: wait for the end stamp, free the record
                Record& r = records[static_cast<uint32_t>(ids[i])];
                while (worker && r.end.load(std::memory_order_acquire) == 0) std::this_thread::yield();
                r.word.store(((ids[i] >> 32) + 1) << 32, std::memory_order_relaxed);
                caller.free_ids.push_back(static_cast<uint32_t>(ids[i]));
            }
        }
        const double r = median(rdtsc_ns), w = median(window_ns);
        std::printf("locks %d, %s: two rdtsc %.1f ns, window %.1f ns, %.2fx\n", g_locks,
                    worker ? "worker" : "no worker", r, w, w / r);
    }
    g_stop = true;
    if (worker) stamper.join();
}
