// A thread's recording state (thread_recording.hpp): its spare notes and
// its channels, made on first use and let go when the thread exits.
#include "thread_recording.hpp"

#include "../device_core.hpp"
#include "note_queue.hpp"

#include <cstring>

#include <sys/syscall.h>
#include <unistd.h>

namespace lapse::detail {

constinit thread_local ThreadRecording* this_thread_recording_ptr __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

// Trivially destructible, so it still reads true once the thread's
// destructors have run (a Duration destroyed by a later one).
thread_local bool recording_gone = false;

// Its destructor is the thread's exit: the channels are orphaned (the
// collector frees them once drained) and the spares freed.
struct RecordingReaper {
    bool armed = false;
    ~RecordingReaper()
    {
        recording_gone = true;
        ThreadRecording* r = this_thread_recording_ptr;
        this_thread_recording_ptr = nullptr;
        if (r == nullptr) return;
        for (ThreadRecording::Entry& e : r->channels)
            if (e.channel) e.channel->orphaned.store(true, std::memory_order_release);
        for (std::size_t i = 0; i < r->spare_count; ++i) delete r->spare[i];
        delete r;
    }
};
thread_local RecordingReaper reaper;

}  // namespace

void reset_for_reuse(WindowNote& n) noexcept
{
    n.interned = nullptr;
    n.name_size = 0;
    // A long name's heap goes with its window, so that a reused note holds
    // none and hand_over need not look (the next long name allocates again).
    if (n.long_name.capacity() > 15) std::string().swap(n.long_name);
    n.message.reset();
    n.refs.store(1, std::memory_order_relaxed);
    n.claim.store(note_unshared, std::memory_order_relaxed);
}

ThreadRecording* make_thread_recording() noexcept
{
    if (recording_gone) return nullptr;
    try {
        auto r = std::make_unique<ThreadRecording>();
        r->thread_id = static_cast<uint64_t>(::syscall(SYS_gettid));
        reaper.armed = true;  // constructs it: its destructor runs at the thread's exit
        this_thread_recording_ptr = r.release();
        return this_thread_recording_ptr;
    } catch (...) {
        return nullptr;
    }
}

namespace {

// How many returned notes a thread moves onto its spares at a time.
constexpr std::size_t kRefill = 256;
// How many windows ahead a spare note's lines are fetched: one window
// ahead left too little time for lines that come from the collector's core.
constexpr std::size_t kPrefetchAhead = 3;

// A note given back was last written by another core (the collector's, or
// whichever thread dropped the Duration), and the window that takes it
// writes its first lines (WindowNote::kHotBytes): those are fetched now,
// for the next window, while this one goes on.
[[gnu::always_inline]] inline void prefetch_for_writing(const WindowNote* note) noexcept
{
    if (note == nullptr) return;
    const char* p = reinterpret_cast<const char*>(note);
    for (std::size_t line = 0; line < WindowNote::kHotBytes; line += 64) __builtin_prefetch(p + line, 1);
}

// A new note, for a thread with no spare one (or no recording state):
// out of line, so that taking a spare saves no registers for it.
[[gnu::noinline]] WindowNote* new_note(const ThreadRecording* r)
{
    auto* n = new WindowNote;
    n->thread = r != nullptr ? r->thread_id : current_thread_id();
    return n;
}

// Moves the notes the collector is done with onto the thread's empty
// stack of spares, from the channel this thread used last (it is that
// return ring's only consumer), so that a warm thread allocates nothing
// and takes a note with no look at a ring. False when there were none.
[[gnu::noinline]] bool refill_spares(ThreadRecording& r) noexcept
{
    NoteChannel* ch = r.channels[r.last_channel].channel.get();
    if (ch == nullptr) return false;
    r.spare_count = ch->returns.pop_many(r.spare.get(), kRefill);
    return r.spare_count != 0;
}

// take_note's body, inlined into make_name_note (an exported function of a
// shared library is not inlined into its callers: it may be interposed).
[[gnu::always_inline]] inline WindowNote* take_spare_or_new_note()
{
    ThreadRecording* r = this_thread_recording();
    if (r == nullptr) [[unlikely]]
        return new_note(nullptr);
    if (r->spare_count == 0 && !refill_spares(*r)) [[unlikely]]
        return new_note(r);
    WindowNote* n = r->spare[--r->spare_count];
    if (r->spare_count > kPrefetchAhead) prefetch_for_writing(r->spare[r->spare_count - 1 - kPrefetchAhead]);
    n->thread = r->thread_id;
    return n;
}

}  // namespace

WindowNote* take_note() { return take_spare_or_new_note(); }

namespace {

// Copies `text`, at most kShortName bytes, in as the note's name (the
// note unnamed until now). Two copies of a fixed size that overlap cover
// any length in their range: no call, no loop. with_long_name takes
// a longer one.
[[gnu::always_inline]] inline void set_short_name(WindowNote& n, std::string_view text) noexcept
{
    const std::size_t size = text.size();
    const char* from = text.data();
    char* to = n.short_name;
    if (size >= 8) {
        // [0, 8), [8, 16) past 16, and the last 8: any length from 8 to 24.
        std::memcpy(to, from, 8);
        if (size > 16) std::memcpy(to + 8, from + 8, 8);
        std::memcpy(to + size - 8, from + size - 8, 8);
    } else if (size >= 4) {
        std::memcpy(to, from, 4);
        std::memcpy(to + size - 4, from + size - 4, 4);
    } else if (size > 0) {
        to[0] = from[0];
        to[size / 2] = from[size / 2];
        to[size - 1] = from[size - 1];
    }
    n.name_size = static_cast<uint32_t>(size);
}

// make_name_note for a name longer than a note holds in itself: out of
// line, so that the short copy needs no registers saved and no unwinding.
[[gnu::noinline]] WindowNote* with_long_name(WindowNote* note, std::string_view name)
{
    try {
        note->long_name.assign(name);
    } catch (...) {
        delete note;
        throw;
    }
    note->name_size = static_cast<uint32_t>(name.size());
    return note;
}

}  // namespace

// Next to take_note, so that a named window's start makes one call.
WindowNote* make_name_note(std::string_view name)
{
    WindowNote* note = take_spare_or_new_note();
    if (name.size() > WindowNote::kShortName) [[unlikely]]
        return with_long_name(note, name);
    set_short_name(*note, name);
    return note;
}

WindowNote* make_interned_note(const InternedName* name)
{
    WindowNote* note = take_spare_or_new_note();
    note->interned = name;
    return note;
}

void keep_note(WindowNote* note) noexcept
{
    ThreadRecording* r = this_thread_recording();
    if (r == nullptr || r->spare_count >= ThreadRecording::kSpareLimit) {
        delete note;
        return;
    }
    reset_for_reuse(*note);
    r->spare[r->spare_count++] = note;
}

}  // namespace lapse::detail
