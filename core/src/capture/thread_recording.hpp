// Internal: what a thread that closes named windows keeps for recording,
// so that a named window touches no memory another thread writes and
// allocates nothing once the thread is warm:
//   * its id (read once, not per window);
//   * a bounded stack of spare window notes to reuse (a named window needs
//     a note; the collector hands the ones it is done with back through
//     the channel's return ring, note_queue.hpp, and the thread moves them
//     onto this stack in bulk);
//   * its channel to each capture it recorded into lately.
// One pointer in thread-local storage finds it all: one load per use.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace lapse::detail {

struct NoteChannel;
class NoteRing;
struct WindowNote;

struct ThreadRecording {
    struct Entry {
        uint64_t capture = 0;  // CaptureCore's id (never reused)
        std::shared_ptr<NoteChannel> channel;
    };
    // At most this many spare notes per thread (about 1.5 MiB): the windows
    // of a frame or two in flight, not memory that grows with the run.
    static constexpr std::size_t kSpareLimit = 8192;
    uint64_t thread_id = 0;
    std::size_t spare_count = 0;
    std::unique_ptr<WindowNote*[]> spare = std::make_unique<WindowNote*[]>(kSpareLimit);
    // A thread that moves on to a fifth capture lets its oldest channel go
    // (orphaned); the collector frees it once it holds nothing.
    std::array<Entry, 4> channels;
    unsigned next_channel = 0;  // the slot a new channel takes
    unsigned last_channel = 0;  // the slot used last (looked at first)
};

// Initial-exec: the library is linked by its hosts, and one pointer of
// static TLS is what that costs; the hot path then reads it with one load
// (constinit: no dynamic initialisation, so no TLS wrapper call before it).
extern constinit thread_local ThreadRecording* this_thread_recording_ptr __attribute__((tls_model("initial-exec")));
ThreadRecording* make_thread_recording() noexcept;

// Null only while the thread is exiting (or out of memory): the caller
// then takes the plain path (allocate, drop into the capture's count).
inline ThreadRecording* this_thread_recording() noexcept
{
    ThreadRecording* r = this_thread_recording_ptr;
    if (r != nullptr) [[likely]]
        return r;
    return make_thread_recording();
}

// A note ready for a new window: a spare one of this thread, or one the
// collector handed back through the channel it used last, or a new one.
// Throws std::bad_alloc like new.
WindowNote* take_note();
// Keeps `note` as a spare of this thread, or deletes it when the list is
// full. The caller is its last owner.
void keep_note(WindowNote* note) noexcept;
// Makes a note given back (a spare, or one the collector returns) ready
// for its next window, so that taking it costs the window nothing: what a
// new window reads before it writes it (no name, no message, one owner,
// unshared), holding no heap (hand_over then counts the note alone
// against the budget). Everything else is written before anyone reads it: device,
// channel, token, stream, source, close_thread and cost by hand_over
// before the note is shared, the result by publish_result or give_up_note
// before the claim reads final. [the note's last owner]
void reset_for_reuse(WindowNote& note) noexcept;

}  // namespace lapse::detail
