// Experiment (not part of the build): how many instructions a window would
// cost the caller if its record were a slot in its thread's own ring
// instead of a record popped off a shared free list (docs/performance.md,
// "2026-12-07 (last)", "What 100 instructions would take").
//
// A model, not a plugin: no worker thread, no resolve, no slow paths
// (each is a counted failure that never happens here). What it keeps of
// the real path, so that its count is comparable with
// scripts/bench-instructions.sh's: the host loop of
// tests/bench/window_instructions.cpp through two function pointers, the
// SDK trampolines' tests (a null device or token, options on the end),
// the stream test, the thread's lane found by its thread pointer, the
// signal-handler flag around the lane, a marker cell per edge carrying
// the queue position it was pushed at (written only when it moved), the
// lane's room check, a check and an OPEN word on the slot (its ring
// position is its generation, so a stale token can never match a slot
// reused since), the end's check of the token against the slot and its
// close by CAS (an abandon on another thread may race it), and the
// sleeping-worker test after each push. The switches: HOST_INLINE, the
// calls inlined into the host's loop (a fast path the host compiles in);
// TLS_LANE, the lane in initial-exec TLS, not found by a hash; NO_SIGNAL_FLAG
// and NO_EPOCH, without those two rules, to see what each costs.
//
//   flags="-DHOST_INLINE -DTLS_LANE"   # any of the four, or none
//   g++ -O2 -g -std=c++20 $flags docs/experiments/slot_ring_model.cpp -o /tmp/slot_ring_model
//   valgrind --tool=callgrind --toggle-collect='*lapse_counted_windows*' /tmp/slot_ring_model 2>&1 |
//       sed -n 's/.*Collected : //p' | awk '{print $1 / 60000}'
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

namespace {

struct Token {
    uint64_t id;
    uint32_t opened_on;
    uint32_t reserved;
};
struct Error;
struct EndOptions;
enum Status : int32_t { kOk = 0, kFailed = -1 };

constexpr uint64_t kSlots = 1 << 16, kCells = 1 << 18;
constexpr uint64_t kFree = 0, kOpen = 1, kClosed = 2;  // a slot word: position << 16 | holds << 8 | state
constexpr uint32_t kStart = 1, kEnd = 2, kEpochTag = 3;

struct alignas(32) Slot {
    std::atomic<uint64_t> word{kFree};
    std::atomic<int64_t> start_ns{0}, end_ns{0};
    std::atomic<uint32_t> failures{0};
};

struct Lane {
    uintptr_t owner = 0;
    uint32_t number = 0;  // within its stream: the token's high bits, the marker's key
    std::unique_ptr<Slot[]> slots{new Slot[kSlots]};
    std::unique_ptr<std::atomic<uint32_t>[]> cells{new std::atomic<uint32_t>[kCells]};
    alignas(64) std::atomic<uint64_t> slot_pos{0};
    std::atomic<uint64_t> tail{0}, room_end{kCells}, last_epoch{~uint64_t{0}};
    std::atomic<bool> inside{false};
};

struct Stream {
    Lane* by_slot[64] = {};    // found by a hash of the thread pointer
    Lane* by_number[64] = {};  // found by a token
    alignas(64) std::atomic<uint64_t> queue_tail{0};  // what a marker's epoch reads
    alignas(64) std::atomic<uint32_t> sleeping{0};
};

struct Device {
    uint32_t streams = 1;
    Stream* stream[8] = {};
};

uint32_t slot_of(uintptr_t owner) { return static_cast<uint32_t>((owner * 0x9E3779B97F4A7C15ull) >> 58); }
uintptr_t thread_pointer() { return reinterpret_cast<uintptr_t>(__builtin_thread_pointer()); }

[[gnu::noinline]] Status slow() { return kFailed; }

#if defined(TLS_LANE)
// One lane per thread for the one stream, in initial-exec TLS: what a
// lookup costs at least.
__thread Lane* tls_lane __attribute__((tls_model("initial-exec"))) = nullptr;
[[gnu::always_inline]] inline Lane* own_lane(Stream&) { return tls_lane; }
#else
[[gnu::always_inline]] inline Lane* own_lane(Stream& s)
{
    const uintptr_t self = thread_pointer();
    Lane* lane = s.by_slot[slot_of(self)];
    return lane != nullptr && lane->owner == self ? lane : nullptr;
}
#endif

#if defined(NO_SIGNAL_FLAG)
[[gnu::always_inline]] inline bool enter(Lane&) { return true; }
[[gnu::always_inline]] inline void leave(Lane&) {}
#else
[[gnu::always_inline]] inline bool enter(Lane& lane)
{
    if (lane.inside.load(std::memory_order_relaxed)) return false;
    lane.inside.store(true, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    return true;
}
[[gnu::always_inline]] inline void leave(Lane& lane)
{
    std::atomic_signal_fence(std::memory_order_seq_cst);
    lane.inside.store(false, std::memory_order_relaxed);
}
#endif

[[gnu::always_inline]] inline bool push(Stream& s, Lane& lane, uint32_t cell)
{
#if defined(NO_EPOCH)
    const uint64_t epoch = 0;
    uint64_t t = lane.tail.load(std::memory_order_relaxed);
    const bool new_epoch = false;
    (void)s;
#else
    const uint64_t epoch = s.queue_tail.load(std::memory_order_relaxed);
    uint64_t t = lane.tail.load(std::memory_order_relaxed);
    const bool new_epoch = epoch != lane.last_epoch.load(std::memory_order_relaxed);
#endif
    const uint64_t need = new_epoch ? 4 : 1;
    if (t + need > lane.room_end.load(std::memory_order_relaxed)) [[unlikely]]
        return false;
    if (new_epoch) [[unlikely]] {
        lane.cells[t & (kCells - 1)].store(kEpochTag, std::memory_order_relaxed);
        lane.cells[(t + 1) & (kCells - 1)].store(static_cast<uint32_t>(epoch), std::memory_order_relaxed);
        lane.cells[(t + 2) & (kCells - 1)].store(static_cast<uint32_t>(epoch >> 32), std::memory_order_relaxed);
        t += 3;
        lane.last_epoch.store(epoch, std::memory_order_relaxed);
    }
    lane.cells[t & (kCells - 1)].store(cell, std::memory_order_relaxed);
    lane.tail.store(t + 1, std::memory_order_release);
    return true;
}

#if defined(HOST_INLINE)
#define LAPSE_MODEL_CALL [[gnu::always_inline]] inline
#else
#define LAPSE_MODEL_CALL [[gnu::noinline]]
#endif

LAPSE_MODEL_CALL Status profile_start(Device* dev, uint32_t stream, Token* token, Error*)
{
    if (dev == nullptr || token == nullptr) [[unlikely]]
        return slow();
    if (stream >= dev->streams) [[unlikely]]
        return slow();
    Stream& s = *dev->stream[stream];
    Lane* lane = own_lane(s);
    if (lane == nullptr || !enter(*lane)) [[unlikely]]
        return slow();
    const uint64_t pos = lane->slot_pos.load(std::memory_order_relaxed);
    Slot& slot = lane->slots[pos & (kSlots - 1)];
    if ((slot.word.load(std::memory_order_relaxed) & 0xff) != kFree) [[unlikely]] {
        leave(*lane);
        return slow();  // the slot's window from a lap ago still lives: the shared table
    }
    slot.word.store(pos << 16 | 1 << 8 | kOpen, std::memory_order_release);
    lane->slot_pos.store(pos + 1, std::memory_order_relaxed);
    const uint32_t key = lane->number << 24 | static_cast<uint32_t>(pos & (kSlots - 1));
    const bool pushed = push(s, *lane, key << 2 | kStart);
    leave(*lane);
    if (!pushed) [[unlikely]]
        return slow();
    *token = Token{uint64_t{lane->number} << 48 | (pos + 1), stream, 0};
    if (s.sleeping.load(std::memory_order_seq_cst) == 1) [[unlikely]]
        return slow();
    return kOk;
}

LAPSE_MODEL_CALL Status profile_end(Device* dev, Token token, const EndOptions* options, Error*)
{
    if (dev == nullptr || options != nullptr) [[unlikely]]
        return slow();
    if (token.opened_on >= dev->streams) [[unlikely]]
        return slow();
    Stream& s = *dev->stream[token.opened_on];
    const Lane* opener = s.by_number[(token.id >> 48) & 63];
    const uint64_t pos = (token.id & ((uint64_t{1} << 48) - 1)) - 1;
    Slot& slot = opener->slots[pos & (kSlots - 1)];
    uint64_t w = slot.word.load(std::memory_order_acquire);
    if ((w & ~uint64_t{0xff00}) != (pos << 16 | kOpen)) [[unlikely]]
        return slow();
    if (!slot.word.compare_exchange_strong(w, w + (1 << 8) - kOpen + kClosed, std::memory_order_acq_rel)) [[unlikely]]
        return slow();
    Lane* lane = own_lane(s);
    if (lane == nullptr || !enter(*lane)) [[unlikely]]
        return slow();
    const uint32_t key = static_cast<uint32_t>((token.id >> 48) & 63) << 24 | static_cast<uint32_t>(pos & (kSlots - 1));
    const bool pushed = push(s, *lane, key << 2 | kEnd);
    leave(*lane);
    if (!pushed) [[unlikely]]
        return slow();
    if (s.sleeping.load(std::memory_order_seq_cst) == 1) [[unlikely]]
        return slow();
    return kOk;
}

struct Plugin {
    Status (*profile_start)(Device*, uint32_t, Token*, Error*);
    Status (*profile_end)(Device*, Token, const EndOptions*, Error*);
};

constexpr uint32_t kWindowsPerRound = 20000;

// The host loop of tests/bench/window_instructions.cpp, as written there;
// with HOST_INLINE, the same calls inlined into it (a fast path the host
// compiles in, as Tracy's macro is), not made through the pointers.
[[gnu::noinline]] bool lapse_counted_windows(const Plugin& p, Device* h, std::vector<Token>& tokens)
{
    for (uint32_t i = 0; i < kWindowsPerRound; ++i) {
        Token t;
#if defined(HOST_INLINE)
        (void)p;
        if (profile_start(h, 0, &t, nullptr) != kOk || profile_end(h, t, nullptr, nullptr) != kOk) [[unlikely]]
            return false;
#else
        if (p.profile_start(h, 0, &t, nullptr) != kOk || p.profile_end(h, t, nullptr, nullptr) != kOk) [[unlikely]]
            return false;
#endif
        tokens[i] = t;
    }
    return true;
}

}  // namespace

int main()
{
    auto stream = std::make_unique<Stream>();
    auto lane = std::make_unique<Lane>();
    lane->owner = thread_pointer();
#if defined(TLS_LANE)
    tls_lane = lane.get();
#endif
    stream->by_slot[slot_of(lane->owner)] = lane.get();
    stream->by_number[0] = lane.get();
    Device dev;
    dev.stream[0] = stream.get();
    static Plugin plugin{&profile_start, &profile_end};
    // Through a volatile pointer, so that the calls stay indirect.
    const Plugin* volatile p = &plugin;
    std::vector<Token> tokens(kWindowsPerRound);
    for (int round = 0; round < 3; ++round) {
        if (!lapse_counted_windows(*p, &dev, tokens)) {
            std::fprintf(stderr, "slot_ring_model: a window took a slow path in round %d\n", round);
            return 1;
        }
        // What a resolve would do: free every slot of the round.
        for (const Token& t : tokens) lane->slots[((t.id & 0xffffffffffff) - 1) & (kSlots - 1)].word.store(kFree);
    }
    std::printf("slot_ring_model: 3 rounds of %u windows\n", kWindowsPerRound);
    return 0;
}
