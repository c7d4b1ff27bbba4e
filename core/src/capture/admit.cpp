// The closing thread's side of a capture: a named window's note filled in
// (DeviceCore::capture_window), its channel, its share of the budget, and
// handing the note over (CaptureCore::admit). Nothing here writes memory
// another thread writes, except once per slice of the budget (granted_)
// and on a thread's first window into a capture. The common case
// (admit_at_once) is inlined into hand_over and calls nothing, so a named
// window's hand-over is one call that saves no registers; everything
// else is behind one call out of line (hand_over_rest).
#include "capture_core.hpp"

#include "../device_core.hpp"
#include "thread_recording.hpp"


namespace lapse::detail {

NoteChannel::~NoteChannel()
{
    while (WindowNote* n = returns.pop()) delete n;
    // Only a window closed while its capture was closing is left here: the
    // collector's share of it goes, the caller's stays with the caller.
    while (WindowNote* n = notes.pop())
        if (n->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete n;
}

namespace {

uint32_t heap_bytes(const std::string& s) noexcept
{
    return s.capacity() > 15 ? static_cast<uint32_t>(s.capacity() + 1) : 0;  // beyond the small-string buffer
}

uint32_t heap_bytes(const std::unique_ptr<std::string>& s) noexcept
{
    return s != nullptr ? static_cast<uint32_t>(sizeof(std::string)) + heap_bytes(*s) : 0;
}

}  // namespace

NoteChannel* CaptureCore::new_channel_for_this_thread(ThreadRecording& t) noexcept
{
    for (unsigned i = 0; i < t.channels.size(); ++i)
        if (t.channels[i].capture == id_) {
            t.last_channel = i;
            return t.channels[i].channel.get();
        }
    try {
        // The return ring holds as many notes as the window ring: when the
        // thread's spares are full, notes wait there rather than going
        // back to the heap and coming again from it.
        auto ch = std::make_shared<NoteChannel>(ring_size_, ring_size_);
        {
            std::lock_guard lock(channels_mutex_);
            channels_.push_back(ch);
            channels_version_.fetch_add(1, std::memory_order_release);
        }
        t.last_channel = t.next_channel++ % t.channels.size();
        ThreadRecording::Entry& slot = t.channels[t.last_channel];
        if (slot.channel) slot.channel->orphaned.store(true, std::memory_order_release);
        slot.capture = id_;
        slot.channel = std::move(ch);
        return slot.channel.get();
    } catch (...) {
        return nullptr;
    }
}

bool CaptureCore::reserve_slow(NoteChannel& ch, uint64_t cost) noexcept
{
    const uint64_t held = ch.held();
    uint64_t grant = ch.grant.load(std::memory_order_relaxed);
    if (held + cost <= grant) {
        // Far more reserved than held (the collector caught up): give a
        // slice back, so that a busy thread can take it.
        if (grant - held > 3 * slice_) {
            grant -= slice_;
            granted_.fetch_sub(slice_, std::memory_order_relaxed);
        }
    }
    while (held + cost > grant) {
        const uint64_t total = granted_.fetch_add(slice_, std::memory_order_relaxed) + slice_;
        if (total > options_.budget_bytes) {
            granted_.fetch_sub(slice_, std::memory_order_relaxed);
            if (release_orphaned_grants() > 0) continue;
            ch.grant.store(grant, std::memory_order_relaxed);
            ch.credit = grant > held ? grant - held : 0;
            return false;
        }
        grant += slice_;
        uint64_t peak = peak_.load(std::memory_order_relaxed);
        while (total > peak && !peak_.compare_exchange_weak(peak, total, std::memory_order_relaxed)) {
        }
    }
    ch.grant.store(grant, std::memory_order_relaxed);
    ch.credit = grant - held - cost;
    return true;
}

uint64_t CaptureCore::release_orphaned_grants() noexcept
{
    uint64_t released = 0;
    std::lock_guard lock(channels_mutex_);
    for (const auto& ch : channels_) {
        // Orphaned is stored (release) after the producer's last write to
        // its channel: nobody charges it again.
        if (!ch->orphaned.load(std::memory_order_acquire)) continue;
        const uint64_t grant = ch->grant.load(std::memory_order_relaxed);
        const uint64_t held = ch->held();
        if (grant <= held) continue;
        ch->grant.store(held, std::memory_order_relaxed);
        released += grant - held;
    }
    granted_.fetch_sub(released, std::memory_order_relaxed);
    return released;
}

[[gnu::always_inline]] inline bool CaptureCore::admit_at_once(WindowNote* note) noexcept
{
    ThreadRecording* t = this_thread_recording_ptr;
    if (t == nullptr) [[unlikely]]
        return false;
    const ThreadRecording::Entry& last = t->channels[t->last_channel];
    if (last.capture != id_) [[unlikely]]
        return false;
    NoteChannel* ch = last.channel.get();
    const uint64_t cost = note->cost;
    if (cost > ch->credit || refusing_.load(std::memory_order_acquire) != 0) [[unlikely]]
        return false;
    note->close_thread = t->thread_id;
    note->channel = ch;
    const uint64_t charged = ch->charged.load(std::memory_order_relaxed);
    ch->charged.store(charged + cost, std::memory_order_relaxed);
    if (!ch->notes.push(note)) [[unlikely]] {
        ch->charged.store(charged, std::memory_order_relaxed);
        return false;
    }
    ch->credit -= cost;
    return true;
}

bool CaptureCore::admit(WindowNote* note) noexcept
{
    ThreadRecording* t = this_thread_recording();
    NoteChannel* ch = t != nullptr ? channel_for_this_thread(*t) : nullptr;
    note->close_thread = t != nullptr ? t->thread_id : current_thread_id();
    if (ch != nullptr) [[likely]] {
        note->channel = ch;
        const uint64_t cost = note->cost;
        for (;;) {
            if (refusing_.load(std::memory_order_acquire) != 0) break;
            if (reserve(*ch, cost)) {
                const uint64_t charged = ch->charged.load(std::memory_order_relaxed);
                ch->charged.store(charged + cost, std::memory_order_relaxed);
                if (ch->notes.push(note)) [[likely]]
                    return true;
                ch->charged.store(charged, std::memory_order_relaxed);
                ch->credit += cost;
            }
            if (options_.policy != CapturePolicy::block) break;
            std::this_thread::sleep_for(std::chrono::microseconds(20));  // wait for the collector to make room
        }
    }
    note->channel = nullptr;
    count_drop(*note);
    return false;
}

// Fills a named window's note and hands it to the capture: `final` is its
// Duration when it closed in a final state (failed, system time), null
// when it closed pending.
[[gnu::always_inline]] inline void DeviceCore::hand_over(CaptureCore* c, WindowNote* n, TokenWords token,
                                                         Stream stream, const Duration* final) noexcept
{
    n->device = this;
    // Word by word, from registers: copied as one 16-byte value, the token
    // went through the stack, and that load waited on the two narrower
    // stores it could not be forwarded from (a stall every window). The
    // empty asm keeps the compiler from merging the two stores again.
    uint64_t id = token.id, tail = token.tail;
    asm("" : "+r"(id), "+r"(tail));
    n->token.id = id;
    n->token.tail = tail;
    n->stream = stream;
    n->source = capture_source.load(std::memory_order_relaxed);
    // Only a long name or a message holds heap: a reused note holds none
    // (reset_for_reuse), so most windows count the note alone.
    n->cost = static_cast<uint32_t>(sizeof(WindowNote));
    if (n->name_size > WindowNote::kShortName || n->message != nullptr) [[unlikely]]
        n->cost += heap_bytes(n->long_name) + heap_bytes(n->message);
    if (final == nullptr) {
        n->claim.store(note_pending, std::memory_order_relaxed);
    } else {
        publish_result(*n, *final);
        n->claim.store(note_final, std::memory_order_relaxed);
    }
    n->refs.store(2, std::memory_order_relaxed);
    if (c->admit_at_once(n)) [[likely]]
        return;
    hand_over_rest(c, n);
}

// Out of line, so that hand_over reaches it by a jump and keeps nothing
// across a call.
[[gnu::noinline]] void DeviceCore::hand_over_rest(CaptureCore* c, WindowNote* n) noexcept
{
    if (!c->admit(n)) {  // dropped (counted): nobody else has seen the note; admit sets close_thread
        n->refs.store(1, std::memory_order_relaxed);
        n->claim.store(note_unshared, std::memory_order_relaxed);
    }
}

void DeviceCore::capture_window(Duration& d) noexcept
{
    CaptureCore* c = capture.load(std::memory_order_acquire);
    WindowNote* n = d.note_;
    if (c == nullptr || n == nullptr || !has_name(*n)) return;
    hand_over(c, n, d.token_words(), d.stream(), d.pending() ? nullptr : &d);
}

void capture_pending(DeviceCore* device, WindowNote* note, lapse_token token, lapse_stream stream) noexcept
{
    CaptureCore* c = device->capture.load(std::memory_order_acquire);
    if (c == nullptr) return;  // the Duration keeps the note (for a session, when one is attached)
    device->hand_over(c, note, token, stream, nullptr);
}

}  // namespace lapse::detail
