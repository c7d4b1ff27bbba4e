// A thread's recording state (thread_recording.hpp): its spare notes and
// its channels, made on first use and let go when the thread exits.
#include "thread_recording.hpp"

#include "../device_core.hpp"
#include "note_queue.hpp"

#include <sys/syscall.h>
#include <unistd.h>

namespace lapse::detail {

thread_local ThreadRecording* this_thread_recording_ptr __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

// At most this many spare notes per thread (about 1.5 MiB): the windows of
// a frame or two in flight, not memory that grows with the run.
constexpr std::size_t spare_limit = 8192;

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
        for (WindowNote* n : r->spare) delete n;
        delete r;
    }
};
thread_local RecordingReaper reaper;

void reset(WindowNote& n) noexcept
{
    n.name.clear();
    n.thread = 0;
    n.message.clear();
    n.refs.store(1, std::memory_order_relaxed);
    n.claim.store(note_unshared, std::memory_order_relaxed);
    n.device = nullptr;
    n.channel = nullptr;
    n.token = TokenWords{};
    n.stream = 0;
    n.source = 0;
    n.close_thread = 0;
    n.cost = 0;
    n.state = DurationState::not_measured;
    n.method = TimingMethod::none;
    n.domain = ClockDomain::none;
    n.start_ns = n.end_ns = 0;
    n.failure = LAPSE_OK;
    n.flags = n.queued_ops = 0;
}

}  // namespace

ThreadRecording* make_thread_recording() noexcept
{
    if (recording_gone) return nullptr;
    try {
        auto r = std::make_unique<ThreadRecording>();
        r->thread_id = static_cast<uint64_t>(::syscall(SYS_gettid));
        r->spare.reserve(spare_limit);
        reaper.armed = true;  // constructs it: its destructor runs at the thread's exit
        this_thread_recording_ptr = r.release();
        return this_thread_recording_ptr;
    } catch (...) {
        return nullptr;
    }
}

WindowNote* take_note()
{
    ThreadRecording* r = this_thread_recording();
    if (r != nullptr && !r->spare.empty()) {
        WindowNote* n = r->spare.back();
        r->spare.pop_back();
        reset(*n);
        n->thread = r->thread_id;
        return n;
    }
    auto* n = new WindowNote;
    n->thread = r != nullptr ? r->thread_id : current_thread_id();
    return n;
}

void keep_note(WindowNote* note) noexcept
{
    ThreadRecording* r = this_thread_recording();
    // A note that grew a long name or message gives its heap back rather
    // than keeping it as a spare.
    if (r == nullptr || r->spare.size() >= spare_limit || note->name.capacity() > 256 ||
        note->message.capacity() > 256) {
        delete note;
        return;
    }
    r->spare.push_back(note);  // reserved: cannot throw
}

void take_back_notes(ThreadRecording& thread, NoteRing& returns) noexcept
{
    if (!thread.spare.empty()) return;
    while (thread.spare.size() < spare_limit)
        if (WindowNote* n = returns.pop())
            thread.spare.push_back(n);
        else
            break;
}

}  // namespace lapse::detail
