// Perfetto's protobuf trace (the TracePacket/TrackEvent subset in
// perfetto_trace.proto), written as records arrive: each window becomes a
// SLICE_BEGIN and a SLICE_END packet at once, so memory is the tracks,
// the interned names and the lanes' bounded history, not the windows.
//
// Layout, per input:
//   process track  "<input index>: <file> (<plugin> on <device>)"
//     "thread N"                     system-time windows of OS thread N
//     "stream N (host clock)"        device windows stamped on the host clock
//     "stream N (device clock ...)"  device windows on the device's clock
//     "... (overlap K)"              a lane for windows that overlap without
//                                    nesting (TrackLanes)
//     "thread N (handoffs)"          the ends of split pairs: an "open NAME"
//                                    instant on the opening thread, a flow to
//                                    a "close NAME" instant on the closing one
//
// Size is what Perfetto's own writers do to keep traces small: every track
// (with its overlap lanes) is its own packet sequence, whose defaults name
// the track (TrackEventDefaults.track_uuid) and the clock; that clock is
// sequence-scoped and incremental (each stamp is the delta from the
// sequence's previous one), tied to the host's monotonic clock by one
// ClockSnapshot; names are interned per sequence; annotations are written
// only where a window differs from its track's default.
//
// The trace's primary clock is BUILTIN_CLOCK_MONOTONIC (the host's). A
// device stream's sequence also has an absolute clock in the device's
// domain, and its ClockSnapshot pairs the device clock with the host's:
// at the recorded anchor when the input has one, otherwise the stream's
// first stamp placed at the input's first host stamp, and the track's name
// says it is not aligned. Several inputs on the host clock thus share one
// timeline.
#include "export_format.hpp"

#include "name_cache.hpp"

#include "perfetto_wire.hpp"
#include "reorder_buffer.hpp"
#include "track_lanes.hpp"

#include "perfetto_trace.pb.h"

#include <lapse/window.h>

#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

namespace lapse::cli {
namespace {

namespace pb = perfetto::protos;

constexpr uint32_t host_clock = pb::BUILTIN_CLOCK_MONOTONIC;
// Sequence-scoped clocks (ids 64..127, one set per sequence): 64 is the
// sequence's default, incremental, in the track's own domain; 65 the
// device's clock in absolute nanoseconds, for stamps that go backwards on
// a device track (a host track writes those on host_clock).
constexpr uint32_t incremental_clock = 64;
constexpr uint32_t absolute_device_clock = 65;

// Debug annotation names, interned in every sequence's first packet.
enum AnnotationName : uint64_t { ann_method = 1, ann_work_left_queued, ann_holds_earlier_work };

constexpr std::size_t flush_bytes = 1u << 20;  // the output buffer
// How far before a track's first stamp its incremental clock starts.
constexpr int64_t clock_margin_ns = 10'000'000;

int64_t wrap_add(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
int64_t wrap_sub(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); }

enum class Kind : int { thread, host_stream, device_stream, handoffs };

// One trusted packet sequence: a track and its overlap lanes.
struct Sequence {
    uint32_t id = 0;
    bool device = false;  // stamps in a device's domain
    int64_t last = 0;     // the incremental clock after the sequence's latest stamp on it
    // The fields every event packet of the sequence starts with (its id and
    // SEQ_NEEDS_INCREMENTAL_STATE), encoded once.
    char header[16] = {};
    uint8_t header_size = 0;
    std::unordered_map<std::string, uint64_t> names;  // interned event names
    NameCache recent;  // in front of `names`: most windows reuse a few names
    std::string interned;  // InternedData not yet written: goes into the next packet written
    ReorderBuffer pending;  // events held back to be written in time order
};

struct Track {
    Kind kind = Kind::thread;
    std::string name;
    Sequence seq;
    TrackLanes lanes;
    std::vector<uint64_t> lane_uuids;  // [0]: the track itself, its sequence's default
    TimingMethod default_method = TimingMethod::system;
    ClockAnchor anchor;                // device tracks: device ns <-> host ns
};

class PerfettoWriter {
public:
    PerfettoWriter(std::ostream& out, ExportCounts& counts) : out_(out), counts_(counts)
    {
        buffer_.resize(flush_bytes);
        // The trace's clock, before anything uses it.
        pb::TracePacket p;
        auto* snapshot = p.mutable_clock_snapshot();
        snapshot->set_primary_trace_clock(pb::BUILTIN_CLOCK_MONOTONIC);
        auto* clock = snapshot->add_clocks();
        clock->set_clock_id(host_clock);
        clock->set_timestamp(0);
        emit(p);
    }

    void begin_input(std::size_t index, const InputInfo& info)
    {
        drain_all();
        info_ = &info;
        tracks_.clear();
        recent_[0] = recent_[1] = RecentTrack{};
        first_host_ns_.reset();
        process_uuid_ = next_uuid_++;

        pb::TracePacket p;
        p.set_trusted_packet_sequence_id(next_sequence_++);
        auto* track = p.mutable_track_descriptor();
        track->set_uuid(process_uuid_);
        std::string name = std::to_string(index) + ": " + info.path;
        if (!info.backend.plugin.empty())
            name += " (" + info.backend.plugin + (info.backend.device_name.empty() ? "" : " on " + info.backend.device_name) + ")";
        if (!info.records_work_left_queued) name += " [work_left_queued not recorded]";
        track->mutable_process()->set_pid(static_cast<int32_t>(index + 1));
        track->mutable_process()->set_process_name(name);
        track->set_name(name);
        emit(p);
    }

    void window(const RecordedWindow& w)
    {
        if (w.state == DurationState::failed) {
            ++counts_.failed;
            return;
        }
        if (!measured(w)) {
            ++counts_.not_measured;
            return;
        }
        const Kind kind = w.method == TimingMethod::system        ? Kind::thread
                          : w.domain == ClockDomain::host_monotonic ? Kind::host_stream
                                                                    : Kind::device_stream;
        if (kind != Kind::device_stream && !first_host_ns_) first_host_ns_ = w.start_ns;
        Track& t = track(kind, kind == Kind::thread ? w.thread : w.stream, w.start_ns);
        const uint32_t lane = t.lanes.place(w.start_ns, w.end_ns);
        while (t.lane_uuids.size() <= lane) open_lane(t);
        const bool split = w.close_thread != 0 && w.close_thread != w.thread;

        event_.clear();
        event_.field(pb::TrackEvent::kTypeFieldNumber, pb::TrackEvent::TYPE_SLICE_BEGIN);
        if (lane != 0) event_.field(pb::TrackEvent::kTrackUuidFieldNumber, t.lane_uuids[lane]);
        event_.field(pb::TrackEvent::kNameIidFieldNumber, intern(t.seq, w.name));
        if (w.method != t.default_method) {
            annotation_.clear();
            annotation_.field(pb::DebugAnnotation::kNameIidFieldNumber, ann_method);
            annotation_.bytes(pb::DebugAnnotation::kStringValueFieldNumber, to_string(w.method));
            event_.bytes(pb::TrackEvent::kDebugAnnotationsFieldNumber, annotation_.view());
        }
        if (const auto queued = work_left_queued(*info_, w); queued && *queued) {
            annotation_.clear();
            annotation_.field(pb::DebugAnnotation::kNameIidFieldNumber, ann_work_left_queued);
            annotation_.field(pb::DebugAnnotation::kBoolValueFieldNumber, 1);
            event_.bytes(pb::TrackEvent::kDebugAnnotationsFieldNumber, annotation_.view());
        }
        if ((w.flags & LAPSE_DURATION_HOLDS_EARLIER_WORK) != 0) {
            annotation_.clear();
            annotation_.field(pb::DebugAnnotation::kNameIidFieldNumber, ann_holds_earlier_work);
            annotation_.field(pb::DebugAnnotation::kBoolValueFieldNumber, 1);
            event_.bytes(pb::TrackEvent::kDebugAnnotationsFieldNumber, annotation_.view());
        }
        packet(t.seq, w.start_ns);

        event_.clear();
        event_.field(pb::TrackEvent::kTypeFieldNumber, pb::TrackEvent::TYPE_SLICE_END);
        if (lane != 0) event_.field(pb::TrackEvent::kTrackUuidFieldNumber, t.lane_uuids[lane]);
        packet(t.seq, w.end_ns);
        ++counts_.written;

        if (split) handoff(w, t);
    }

    // Writes what the sequences hold back, then the buffer.
    void finish()
    {
        drain_all();
        flush();
    }

    void flush()
    {
        out_.write(buffer_.data(), static_cast<std::streamsize>(used_));
        used_ = 0;
    }

private:
    // The packet whose track event is in event_, on `seq`, at `ns` in the
    // sequence's domain: held back in the sequence's reorder buffer.
    // (Inlined: it runs twice per window, and a call costs as much as its body.)
    [[gnu::always_inline]] void packet(Sequence& seq, int64_t ns)
    {
        if (event_.size() > sizeof HeldEvent::bytes) {  // (no event lapse writes is this long)
            drain(seq);
            write(seq, ns, event_.view());
            return;
        }
        seq.pending.add(
            ns, order_++,
            [&](HeldEvent& e) {
                e.size = static_cast<uint8_t>(event_.size());
                std::memcpy(e.bytes, event_.view().data(), sizeof e.bytes);  // a fixed size: no call (event_ holds more)
            },
            [&](const HeldEvent& out) { write(seq, out.ns, std::string_view(out.bytes, out.size)); });
    }

    void drain(Sequence& seq)
    {
        seq.pending.drain([&](const HeldEvent& out) { write(seq, out.ns, std::string_view(out.bytes, out.size)); });
    }

    void drain_all()
    {
        for (auto& [key, track] : tracks_) drain(track->seq);
    }

    [[gnu::always_inline]] void write(Sequence& seq, int64_t ns, std::string_view event)
    {
        const bool forward = ns >= seq.last;
        // The default clock counts from the sequence's previous stamp on it;
        // a stamp too late even for the reorder buffer is absolute, and
        // leaves the incremental clock as it was.
        const uint64_t stamp = forward ? static_cast<uint64_t>(ns) - static_cast<uint64_t>(seq.last) : static_cast<uint64_t>(ns);
        const uint32_t clock = seq.device ? absolute_device_clock : host_clock;
        using P = pb::TracePacket;
        std::size_t body = seq.header_size + wire::field_size(P::kTimestampFieldNumber, stamp) +
                           wire::bytes_size(P::kTrackEventFieldNumber, event.size());
        if (!forward) body += wire::field_size(P::kTimestampClockIdFieldNumber, clock);
        if (!seq.interned.empty()) body += wire::bytes_size(P::kInternedDataFieldNumber, seq.interned.size());
        char* p = room(wire::bytes_size(1, body) + sizeof HeldEvent::bytes);
        p = wire::put_varint(wire::put_varint(p, 1 << 3 | 2), body);  // Trace.packet
        std::memcpy(p, seq.header, sizeof seq.header);  // (room() left at least that much past the packet)
        p += seq.header_size;
        if (!seq.interned.empty()) {  // before every event that uses it: they are all still held back
            p = wire::put_bytes(p, P::kInternedDataFieldNumber, seq.interned);
            seq.interned.clear();
        }
        p = wire::put_field(p, P::kTimestampFieldNumber, stamp);
        if (forward)
            seq.last = ns;
        else
            p = wire::put_field(p, P::kTimestampClockIdFieldNumber, clock);
        p = wire::put_varint(wire::put_varint(p, P::kTrackEventFieldNumber << 3 | 2), event.size());
        // Every event comes from a HeldEvent or event_, both at least
        // sizeof HeldEvent::bytes long: a fixed-size copy (no call), and
        // what it writes past the event is written over next.
        if (event.size() <= sizeof HeldEvent::bytes)
            std::memcpy(p, event.data(), sizeof HeldEvent::bytes);
        else
            std::memcpy(p, event.data(), event.size());
        used_ = static_cast<std::size_t>(p + event.size() - buffer_.data());
    }

    // `n` bytes at the end of the output buffer, flushed first when full.
    [[gnu::always_inline]] char* room(std::size_t n)
    {
        if (used_ + n > buffer_.size()) {
            flush();
            if (n > buffer_.size()) buffer_.resize(n);
        }
        return buffer_.data() + used_;
    }

    // A packet built with the generated classes (descriptors, snapshots).
    void emit(const pb::TracePacket& p)
    {
        p.SerializeToString(&scratch_);
        char* at = room(wire::bytes_size(1, scratch_.size()));
        used_ = static_cast<std::size_t>(wire::put_bytes(at, 1, scratch_) - buffer_.data());
    }

    [[gnu::always_inline]] uint64_t intern(Sequence& seq, std::string_view name)
    {
        const NameCache::Key key = NameCache::key(name);
        if (const uint64_t iid = seq.recent.find(key)) return iid;
        const uint64_t iid = intern_new(seq, name);
        seq.recent.put(key, iid);
        return iid;
    }

    uint64_t intern_new(Sequence& seq, std::string_view name)
    {
        key_.assign(name);  // the table's key type, without an allocation per lookup
        auto [it, added] = seq.names.try_emplace(key_, seq.names.size() + 1);
        if (added) {
            entry_.clear();
            wire::field(entry_, pb::EventName::kIidFieldNumber, it->second);
            wire::bytes(entry_, pb::EventName::kNameFieldNumber, name);
            wire::bytes(seq.interned, pb::InternedData::kEventNamesFieldNumber, entry_);
        }
        return it->second;
    }

    // The track of (kind, id), created with its sequence the first time,
    // its incremental clock starting at `first_ns` (in the track's domain).
    Track& track(Kind kind, uint64_t id, int64_t first_ns)
    {
        // The last two tracks used: windows often alternate between two.
        const std::pair key{kind, id};
        if (recent_[0].track != nullptr && recent_[0].key == key) return *recent_[0].track;
        std::swap(recent_[0], recent_[1]);
        if (recent_[0].track != nullptr && recent_[0].key == key) return *recent_[0].track;
        auto [it, added] = tracks_.try_emplace(key);
        if (added) it->second = create_track(kind, id, first_ns);
        recent_[0] = {key, it->second.get()};
        return *recent_[0].track;
    }

    std::unique_ptr<Track> create_track(Kind kind, uint64_t id, int64_t first_ns)
    {
        auto t = std::make_unique<Track>();
        t->kind = kind;
        t->seq.id = next_sequence_++;
        {
            using P = pb::TracePacket;
            char* h = wire::put_field(t->seq.header, P::kTrustedPacketSequenceIdFieldNumber, t->seq.id);
            h = wire::put_field(h, P::kSequenceFlagsFieldNumber, P::SEQ_NEEDS_INCREMENTAL_STATE);
            t->seq.header_size = static_cast<uint8_t>(h - t->seq.header);
        }
        t->seq.device = kind == Kind::device_stream;
        t->default_method = kind == Kind::thread ? TimingMethod::system : TimingMethod::device;
        const std::string thread = "thread " + std::to_string(id), stream = "stream " + std::to_string(id);
        switch (kind) {
        case Kind::thread: t->name = thread; break;
        case Kind::handoffs: t->name = thread + " (handoffs)"; break;
        case Kind::host_stream: t->name = stream + " (host clock)"; break;
        case Kind::device_stream: {
            const auto a = info_->device_clock_anchors.find(static_cast<Stream>(id));
            t->anchor = a != info_->device_clock_anchors.end() ? a->second
                                                               : ClockAnchor{first_host_ns_.value_or(first_ns), first_ns};
            t->name = stream + (a != info_->device_clock_anchors.end() ? " (device clock, anchored to host)"
                                                                       : " (device clock: own timeline, not aligned with host)");
            break;
        }
        }
        const uint64_t uuid = next_uuid_++;
        t->lane_uuids.push_back(uuid);

        // The sequence's first packet: its state cleared, its defaults, the
        // annotation names, and the track.
        pb::TracePacket first;
        first.set_trusted_packet_sequence_id(t->seq.id);
        first.set_sequence_flags(pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
        auto* defaults = first.mutable_trace_packet_defaults();
        defaults->set_timestamp_clock_id(incremental_clock);
        defaults->mutable_track_event_defaults()->set_track_uuid(uuid);
        for (const auto& [iid, text] : {std::pair{ann_method, "method"}, std::pair{ann_work_left_queued, "work_left_queued"},
                                        std::pair{ann_holds_earlier_work, "holds_earlier_work"}}) {
            auto* n = first.mutable_interned_data()->add_debug_annotation_names();
            n->set_iid(iid);
            n->set_name(text);
        }
        auto* d = first.mutable_track_descriptor();
        d->set_uuid(uuid);
        d->set_parent_uuid(process_uuid_);
        d->set_name(t->name);
        emit(first);

        // Its clocks, read at one instant: the host's, the incremental one
        // (and the device's absolute one), a little before first_ns, so
        // that events a little earlier still count from it.
        const int64_t base_ns = wrap_sub(first_ns, clock_margin_ns);
        pb::TracePacket p;
        p.set_trusted_packet_sequence_id(t->seq.id);
        auto* snapshot = p.mutable_clock_snapshot();
        snapshot->set_primary_trace_clock(pb::BUILTIN_CLOCK_MONOTONIC);
        auto* host = snapshot->add_clocks();
        host->set_clock_id(host_clock);
        host->set_timestamp(static_cast<uint64_t>(t->seq.device ? to_host(*t, base_ns) : base_ns));
        auto* incremental = snapshot->add_clocks();
        incremental->set_clock_id(incremental_clock);
        incremental->set_timestamp(static_cast<uint64_t>(base_ns));
        incremental->set_is_incremental(true);
        if (t->seq.device) {
            auto* device = snapshot->add_clocks();
            device->set_clock_id(absolute_device_clock);
            device->set_timestamp(static_cast<uint64_t>(base_ns));
        }
        emit(p);
        t->seq.last = base_ns;
        return t;
    }

    static int64_t to_host(const Track& t, int64_t device_ns)
    {
        return wrap_add(t.anchor.host_ns, wrap_sub(device_ns, t.anchor.domain_ns));
    }

    void open_lane(Track& t)
    {
        const std::size_t lane = t.lane_uuids.size();
        const uint64_t uuid = next_uuid_++;
        t.lane_uuids.push_back(uuid);
        ++counts_.overlap_lanes;
        pb::TracePacket p;
        p.set_trusted_packet_sequence_id(t.seq.id);
        auto* d = p.mutable_track_descriptor();
        d->set_uuid(uuid);
        d->set_parent_uuid(process_uuid_);
        d->set_name(t.name + " (overlap " + std::to_string(lane) + ")");
        emit(p);
    }

    // A split pair: "open NAME" on the opening thread's handoff track, a
    // flow from it to "close NAME" on the closing thread's, on the host clock.
    void handoff(const RecordedWindow& w, const Track& window_track)
    {
        const bool device = window_track.kind == Kind::device_stream;
        const int64_t open_ns = device ? to_host(window_track, w.start_ns) : w.start_ns;
        const int64_t close_ns = device ? to_host(window_track, w.end_ns) : w.end_ns;
        const uint64_t flow = ++counts_.flows;
        for (const bool opening : {true, false}) {
            Track& t = track(Kind::handoffs, opening ? w.thread : w.close_thread, opening ? open_ns : close_ns);
            mark_ = opening ? "open " : "close ";
            mark_ += w.name;
            event_.clear();
            event_.field(pb::TrackEvent::kTypeFieldNumber, pb::TrackEvent::TYPE_INSTANT);
            event_.field(pb::TrackEvent::kNameIidFieldNumber, intern(t.seq, mark_));
            event_.fixed64(opening ? pb::TrackEvent::kFlowIdsFieldNumber : pb::TrackEvent::kTerminatingFlowIdsFieldNumber,
                          flow);
            packet(t.seq, opening ? open_ns : close_ns);
        }
    }

    std::ostream& out_;
    ExportCounts& counts_;
    std::vector<char> buffer_;  // the output: buffer_[0, used_), written out when full
    std::size_t used_ = 0;
    wire::Small<64> event_;
    wire::Small<32> annotation_;
    std::string entry_, scratch_, mark_, key_;
    uint64_t order_ = 0;  // arrival order of track events
    const InputInfo* info_ = nullptr;
    uint32_t next_sequence_ = 1;
    uint64_t next_uuid_ = 1;
    uint64_t process_uuid_ = 0;
    std::optional<int64_t> first_host_ns_;
    std::map<std::pair<Kind, uint64_t>, std::unique_ptr<Track>> tracks_;
    struct RecentTrack {
        std::pair<Kind, uint64_t> key{};
        Track* track = nullptr;
    };
    RecentTrack recent_[2];
};

}  // namespace

void write_perfetto_export(RecordSource& source, std::ostream& out, ExportCounts& counts)
{
    PerfettoWriter writer(out, counts);
    RecordedWindow record;
    while (const auto index = source.next_input()) {
        writer.begin_input(*index, source.info());
        while (source.next_record(record)) writer.window(record);
    }
    writer.finish();
}

}  // namespace lapse::cli
