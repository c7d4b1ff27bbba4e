// DeviceCore's side of recording into a capture: attaching one, and the claim that makes each window resolve once whether
// the caller or the collector gets to it first (NoteClaim in
// device_core.hpp).
#include "../device_core.hpp"

#include "capture_core.hpp"

#include <lapse/core/capture.hpp>

#include <thread>

namespace lapse::detail {


// Copies a final Duration's result into its note.
void publish_result(WindowNote& note, const Duration& d) noexcept
{
    note.state = d.state();
    note.method = d.method();
    note.domain = ClockDomain::none;
    note.start_ns = note.end_ns = 0;
    note.flags = note.queued_ops = 0;
    if (std::optional<Interval> iv = d.interval()) {
        note.start_ns = iv->start_ns;
        note.end_ns = iv->end_ns;
        note.domain = iv->domain;
        note.flags = d.flags();
        note.queued_ops = d.queued_ops();
    }
    note.failure = d.error_status();
}

void DeviceCore::attach_capture(std::shared_ptr<Capture> next)
{
    std::lock_guard lock(capture_mutex);
    if (CaptureCore* old = capture.exchange(nullptr, std::memory_order_acq_rel)) old->drain_device(this);
    if (!next) return;
    // The device as it is now: an attach-mode backend has the streams the
    // host attached since open, not the none it opened with.
    const DeviceInfo& info = current_info();
    CaptureSource s;
    s.plugin = info.plugin;
    s.plugin_version = info.plugin_version;
    s.plugin_file = info.plugin_file;
    s.device_name = info.name;
    s.stack = stack;
    s.stream_count = info.stream_count;
    s.capabilities = info.capabilities;
    // What a stream's device windows are stamped on; system-time windows
    // say host in their own records.
    const ClockDomain domain = info.has(LAPSE_CAP_DEVICE_CLOCK) && !info.has(LAPSE_CAP_HOST_TIMELINE)
                                   ? ClockDomain::device
                                   : ClockDomain::host_monotonic;
    s.stream_domains.assign(std::min<uint32_t>(info.stream_count, 4096), domain);
    capture_source.store(next->core().add_source(std::move(s)), std::memory_order_relaxed);
    captures_kept.push_back(next);
    capture.store(&next->core(), std::memory_order_release);
}

void DeviceCore::detach_capture() noexcept
{
    std::lock_guard lock(capture_mutex);
    if (CaptureCore* c = capture.exchange(nullptr, std::memory_order_acq_rel)) c->drain_device(this);
}

void DeviceCore::give_up_note(WindowNote* note, const char* cause) noexcept
{
    abandon_token(this, note->token);
    note->state = DurationState::not_measured;
    note->method = TimingMethod::none;
    note->domain = ClockDomain::none;
    note->start_ns = note->end_ns = 0;
    note->failure = LAPSE_OK;
    note->flags = note->queued_ops = 0;
    try {
        set_message(*note, cause);
    } catch (...) {
    }
    note->claim.store(note_final, std::memory_order_release);
}

std::size_t DeviceCore::claim_shared(Duration* const* items, std::size_t count, Duration** claimed, bool collector)
{
    std::size_t n = 0;
    for (std::size_t i = 0; i < count; ++i) {
        Duration* d = items[i];
        WindowNote* note = d->note_;
        if (note == nullptr || note->claim.load(std::memory_order_relaxed) == note_unshared) {
            claimed[n++] = d;
            continue;
        }
        for (;;) {
            uint32_t c = note->claim.load(std::memory_order_acquire);
            if (c == note_final) {
                // Resolved by the other side: take its result.
                d->device_ = nullptr;
                switch (note->state) {
                case DurationState::ready:
                    d->set_ready(note->method, note->domain, note->start_ns, note->end_ns, note->flags, note->queued_ops);
                    break;
                case DurationState::failed: d->set_failed(note->failure); break;
                default: d->set_state(DurationState::not_measured); break;
                }
                break;
            }
            if (c == note_pending) {
                if (note->claim.compare_exchange_weak(c, note_busy, std::memory_order_acquire)) {
                    claimed[n++] = d;
                    break;
                }
                continue;
            }
            // Busy: the collector never waits (it retries later); a caller
            // waits for the collector's short poll to finish.
            if (collector) break;
            std::this_thread::yield();
        }
    }
    return n;
}

void DeviceCore::finish_resolved(Duration& d)
{
    WindowNote* note = d.note_;
    if (note != nullptr && note->claim.load(std::memory_order_relaxed) == note_busy) {
        // Ours (claimed in this call): publish, or hand back while pending.
        if (d.pending()) {
            note->claim.store(note_pending, std::memory_order_release);
            return;
        }
        publish_result(*note, d);
        record(d);
        note->claim.store(note_final, std::memory_order_release);
        return;
    }
    record(d);
}

std::size_t DeviceCore::resolve_notes(WindowNote** notes, std::size_t count, std::chrono::nanoseconds timeout)
{
    // The collector's buffers, kept from round to round (it is one thread).
    static thread_local std::vector<Duration> durations;
    static thread_local std::vector<Duration*> items;
    durations.resize(count);
    items.resize(count);
    for (std::size_t i = 0; i < count; ++i) {
        if (i + 8 < count) __builtin_prefetch(notes[i + 8]);
        Duration& d = durations[i];
        d.device_ = this;
        d.note_ = notes[i];
        d.set_token(notes[i]->token);
        d.set_stream(notes[i]->stream);
        d.set_state(DurationState::pending);
        items[i] = &d;
    }
    resolve(items.data(), count, timeout, true);
    for (Duration& d : durations) {
        // The collector holds the notes' references itself (and the
        // buffers keep only moved-from, empty Durations).
        d.device_ = nullptr;
        d.note_ = nullptr;
    }
    std::size_t done = 0;
    for (std::size_t i = 0; i < count; ++i)
        if (notes[i]->claim.load(std::memory_order_acquire) == note_final) std::swap(notes[done++], notes[i]);
    return done;
}

}  // namespace lapse::detail
