// Experiment (not part of the build): what a CPU window would cost its
// caller if the window path did no locked read-modify-write, what each of
// today's four locked operations adds back, and what it changes that
// another thread freed the window's record. docs/performance.md, "The
// caller's window without locked operations" (2026-12-05, night) and "The
// model: who frees the record, and what taking it costs" (2026-12-06,
// afternoon) have the figures and what they mean for the CPU plugin's
// design.
//
// The model is the CPU plugin's, reduced to its memory traffic:
//   * the caller takes a free record (see `source` below), writes the
//     record's word, and pushes a start marker; at the end it checks the
//     record's word, marks it closed (today: a CAS) and pushes an end
//     marker;
//   * markers go to a ring of the caller's own (today: a CAS claims a cell
//     of the stream's shared ring), a cell written is a cell ready;
//   * a consumer thread (the stream's worker) takes the written cells in
//     runs, stamps each run's records with one CLOCK_MONOTONIC reading, and
//     leaves the four lines behind the caller's newest cell alone while the
//     caller is pushing (the plugin's spare-producer policy);
//   * after each batch of 1,024 windows the batch is resolved: its end
//     stamps waited for, its records' generations bumped and the records
//     freed, by the caller or by a collector thread (`source`).
// Each batch is timed beside 1,024 pairs of rdtsc reads, as
// `cpu_window_vs_two_rdtsc` is.
//
// Build and run (x86-64):
//   g++ -O2 -std=c++20 -pthread docs/experiments/caller_without_locked_ops.cpp -o /tmp/caller_exp
//   /tmp/caller_exp [locks] [worker|noworker] [source] [ahead]
// `locks` (default 0) puts today's locked operations back, as a mask:
//   1  start pops its record with a CAS (on a stand-in for the free list's
//      head; with source `own` only)
//   2  end closes the record with a CAS
//   4  each marker claims its cell with a CAS (two a window)
// so 7 is the plugin's count (four a window). `noworker` runs no consumer:
// the caller alone. `source` is where the caller's next record comes from:
//   own      a cache of the caller's own, which its resolve refills
//            (default);
//   ownlist  a shared free list (a Treiber stack) the caller pops with a
//            CAS a window and its resolve pushes each batch onto (one CAS):
//            the plugin's unnamed window today;
//   list     the same list, but a collector thread resolves each batch and
//            pushes it: the plugin's named window, whose records a
//            capture's collector frees;
//   inbox    the collector writes the freed records' indices into a ring
//            that only this caller reads, and the caller takes the next
//            with plain loads.
// With a collector the caller waits for it between batches (untimed), as
// the named-window bench waits for the capture to drain. `ahead` (default
// 0) prefetches for writing the record that many windows on (with `list`,
// the next one, whatever the number).
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
constexpr uint32_t kRecords = 1 << 16;
constexpr uint32_t kRing = 4096;       // cells of the caller's ring
constexpr uint64_t kSpared = 64;       // cells (four lines) left to a pushing caller
constexpr uint64_t kLine = 16;         // 4-byte cells a line
constexpr uint32_t kMaxRun = 256;      // markers stamped with one reading at most
constexpr int kPausesWhileHeld = 512;

enum class Source { own, own_list, list, inbox };

struct alignas(32) Record {
    std::atomic<uint64_t> word{0};  // generation << 32 | state (1 open, 2 closed)
    std::atomic<int64_t> start{0};
    std::atomic<int64_t> end{0};    // 0 until the end marker is stamped
    std::atomic<uint32_t> next{0};  // free-list link (index + 1, 0 = end)
};

struct Ring {
    alignas(64) std::atomic<uint64_t> head{0};  // the consumer's: cells before it are free again
    alignas(64) uint64_t seen_head = 0;          // the producer's copy of head
    alignas(64) std::atomic<uint32_t> cells[kRing];  // index * 2 + (1 for an end) + 1; 0 = not written
};

// Indices the collector hands back to the caller (source inbox): one
// writer, one reader, the tail published once a batch.
struct Inbox {
    alignas(64) std::atomic<uint64_t> tail{0};
    alignas(64) uint64_t head = 0;
    uint64_t seen_tail = 0;
    alignas(64) uint32_t slots[kRecords];
};

// A variable alone on its cache line: alignas on a variable only places
// its start, and the linker may put another (read on every look of the
// worker, say) in the rest of the line.
template <class T>
struct alignas(64) OwnLine {
    T v;
    char pad[64 - sizeof(T)];
};

int g_locks = 0;
Source g_source = Source::own;
uint32_t g_ahead = 0;
std::vector<Record> g_records(kRecords);
OwnLine<std::atomic<uint64_t>> g_free_head{{0}, {}};  // the free list's head, {ABA : 32, index + 1 : 32}
OwnLine<std::atomic<uint64_t>> g_ring_tail{{0}, {}};  // stands for the shared ring's tail (locks & 4)
Inbox g_inbox;
std::atomic<bool> g_stop{false};
// The batch handed to the collector, and its answer.
OwnLine<std::atomic<const uint64_t*>> g_batch{{nullptr}, {}};
OwnLine<std::atomic<bool>> g_batch_done{{false}, {}};

int64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// Pushes a batch's records, linked in its order, onto the free list.
void push_batch(const uint64_t* ids)
{
    for (uint32_t i = 0; i + 1 < kBatch; ++i)
        g_records[static_cast<uint32_t>(ids[i])].next.store(static_cast<uint32_t>(ids[i + 1]) + 1, std::memory_order_relaxed);
    Record& last = g_records[static_cast<uint32_t>(ids[kBatch - 1])];
    const uint32_t first = static_cast<uint32_t>(ids[0]);
    uint64_t h = g_free_head.v.load(std::memory_order_relaxed);
    for (;;) {
        last.next.store(static_cast<uint32_t>(h), std::memory_order_relaxed);
        const uint64_t desired = (((h >> 32) + 1) << 32) | (first + 1);
        if (g_free_head.v.compare_exchange_weak(h, desired, std::memory_order_release, std::memory_order_relaxed)) return;
    }
}

struct Caller {
    Ring* ring;
    std::vector<uint32_t> free_ids;  // source own: the caller's cache of free records
    uint64_t tail = 0;

    uint32_t take_record()
    {
        switch (g_source) {
        case Source::own: {
            if (g_locks & 1) {
                uint64_t h = g_free_head.v.load(std::memory_order_relaxed);
                g_free_head.v.compare_exchange_strong(h, h + 1);
            }
            const uint32_t index = free_ids.back();
            free_ids.pop_back();
            if (g_ahead != 0 && free_ids.size() > g_ahead)
                __builtin_prefetch(&g_records[free_ids[free_ids.size() - 1 - g_ahead]], 1);
            return index;
        }
        case Source::own_list:
        case Source::list: {
            uint64_t h = g_free_head.v.load(std::memory_order_acquire);
            for (;;) {
                if (static_cast<uint32_t>(h) == 0) std::abort();  // sized so it never runs dry
                const uint32_t top = static_cast<uint32_t>(h) - 1;
                const uint32_t next = g_records[top].next.load(std::memory_order_relaxed);
                const uint64_t desired = (((h >> 32) + 1) << 32) | next;
                if (g_free_head.v.compare_exchange_weak(h, desired, std::memory_order_acquire)) {
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
        const uint32_t index = static_cast<uint32_t>(id);
        Record& r = g_records[index];
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
            uint64_t t = g_ring_tail.v.load(std::memory_order_relaxed);
            g_ring_tail.v.compare_exchange_strong(t, t + 1);
        }
        while (tail - ring->seen_head >= kRing) ring->seen_head = ring->head.load(std::memory_order_acquire);
        ring->cells[tail % kRing].store(cell, std::memory_order_release);
        ++tail;
    }
};

void consumer(Ring* ring)
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

// Waits for a window's end stamp (when a worker stamps) and moves its
// record to the next generation.
void retire(uint64_t id, bool stamped)
{
    Record& r = g_records[static_cast<uint32_t>(id)];
    while (stamped && r.end.load(std::memory_order_acquire) == 0) std::this_thread::yield();
    r.word.store(((id >> 32) + 1) << 32, std::memory_order_relaxed);
}

void collector()
{
    while (!g_stop.load(std::memory_order_relaxed)) {
        const uint64_t* ids = g_batch.v.exchange(nullptr, std::memory_order_acquire);
        if (ids == nullptr) {
            std::this_thread::sleep_for(std::chrono::microseconds(50));
            continue;
        }
        for (uint32_t i = 0; i < kBatch; ++i) retire(ids[i], true);
        if (g_source == Source::list) {
            push_batch(ids);
        } else {
            const uint64_t t = g_inbox.tail.load(std::memory_order_relaxed);
            for (uint32_t i = 0; i < kBatch; ++i) g_inbox.slots[(t + i) % kRecords] = static_cast<uint32_t>(ids[i]);
            g_inbox.tail.store(t + kBatch, std::memory_order_release);
        }
        g_batch_done.v.store(true, std::memory_order_release);
    }
}

double median(std::vector<double>& v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

bool parse_source(const char* arg)
{
    const struct {
        const char* name;
        Source source;
    } sources[] = {{"own", Source::own}, {"ownlist", Source::own_list}, {"list", Source::list}, {"inbox", Source::inbox}};
    for (const auto& known : sources)
        if (std::strcmp(arg, known.name) == 0) {
            g_source = known.source;
            return true;
        }
    return false;
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc > 1) g_locks = std::atoi(argv[1]);
    const bool worker = argc < 3 || std::strcmp(argv[2], "noworker") != 0;
    if (argc > 3 && !parse_source(argv[3])) {
        std::fprintf(stderr, "usage: %s [locks] [worker|noworker] [own|ownlist|list|inbox] [ahead]\n", argv[0]);
        return 2;
    }
    if (argc > 4) g_ahead = static_cast<uint32_t>(std::atoi(argv[4]));
    const bool collected = g_source == Source::list || g_source == Source::inbox;
    if (collected && !worker) {
        std::fprintf(stderr, "%s: a collector waits for stamps: it needs the worker\n", argv[0]);
        return 2;
    }

    auto* ring = new Ring;
    Caller caller{ring, {}};
    // Every record starts free, wherever this source keeps free records.
    for (uint32_t i = kRecords; i-- > 0;) caller.free_ids.push_back(i);
    for (uint32_t i = 0; i + 1 < kRecords; ++i) g_records[i].next.store(i + 2, std::memory_order_relaxed);
    if (g_source != Source::own) g_free_head.v.store(1, std::memory_order_relaxed);
    for (uint32_t i = 0; i < kRecords; ++i) g_inbox.slots[i] = i;
    g_inbox.tail.store(kRecords, std::memory_order_relaxed);
    std::thread stamper;
    if (worker) stamper = std::thread(consumer, ring);
    std::thread resolver;
    if (collected) resolver = std::thread(collector);

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
            if (collected) {
                g_batch_done.v.store(false, std::memory_order_relaxed);
                g_batch.v.store(ids.data(), std::memory_order_release);
                while (!g_batch_done.v.load(std::memory_order_acquire))
                    std::this_thread::sleep_for(std::chrono::microseconds(20));
                continue;
            }
            for (uint32_t i = 0; i < kBatch; ++i) retire(ids[i], worker);
            if (g_source == Source::own_list) {
                push_batch(ids.data());
            } else {
                for (uint32_t i = 0; i < kBatch; ++i) caller.free_ids.push_back(static_cast<uint32_t>(ids[i]));
            }
        }
        const double r = median(rdtsc_ns), w = median(window_ns);
        std::printf("locks %d, %s, %s, %u ahead: two rdtsc %.1f ns, window %.1f ns, %.2fx\n", g_locks,
                    worker ? "worker" : "no worker", argc > 3 ? argv[3] : "own", g_ahead, r, w, w / r);
    }
    g_stop = true;
    if (stamper.joinable()) stamper.join();
    if (resolver.joinable()) resolver.join();
}
