// Perfetto's protobuf trace (the TracePacket/TrackEvent subset in
// perfetto_trace.proto), written as records arrive: each window becomes a
// SLICE_BEGIN and a SLICE_END packet at once, so memory is the tracks,
// the interned names and the lanes' bounded history, not the windows.
//
// Layout, per input (one trusted packet sequence each, so interning and
// sequence-scoped clocks stay per input):
//   process track  "<input index>: <file> (<plugin> on <device>)"
//     "thread N"                     system-time windows of OS thread N
//     "stream N (host clock)"        device windows stamped on the host clock
//     "stream N (device clock ...)"  device windows on the device's clock
//     "... (overlap K)"              a lane for windows that overlap without
//                                    nesting (TrackLanes)
// The trace's primary clock is BUILTIN_CLOCK_MONOTONIC (the host's). Host
// stamps are written on a sequence-scoped clock counting from the input's
// origin (fewer bytes; one ClockSnapshot ties it to the host's), device
// stamps on a sequence-scoped clock per device stream, tied to the host's
// by a ClockSnapshot: the recorded anchor when the input has one,
// otherwise the stream's first stamp placed at the input's first host
// stamp, and the track's name says it is not aligned. Several inputs on
// the host clock thus share one timeline.
#include "export_format.hpp"

#include "track_lanes.hpp"

#include "perfetto_trace.pb.h"

#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>

namespace lapse::cli {
namespace {

namespace pb = perfetto::protos;

constexpr uint32_t monotonic_clock = pb::BUILTIN_CLOCK_MONOTONIC;
// Sequence-scoped clocks (ids 64..127): 64 is the host's monotonic clock
// counted from the input's origin, so stamps take fewer varint bytes than
// nanoseconds since boot; 65.. are the device clocks of streams.
constexpr uint32_t host_from_origin_clock = 64;
constexpr uint32_t first_device_clock = 65;
constexpr uint32_t device_clock_count = 63;
// The origin sits this far before the input's first host stamp, so windows
// that start a little earlier (they arrive as they end) still count from it;
// the rare one that starts earlier still is written on the host clock.
constexpr int64_t origin_margin_ns = 10'000'000;

// Debug annotation names and string values, interned once per sequence.
// (The clock domain is in the track's name, not repeated on every window.)
enum AnnotationName : uint64_t { ann_method = 1, ann_state, ann_work_left_queued };

class PerfettoWriter {
public:
    PerfettoWriter(std::ostream& out, ExportCounts& counts) : out_(out), counts_(counts) {}

    void begin_input(std::size_t index, const InputInfo& info)
    {
        sequence_ = static_cast<uint32_t>(index + 1);
        info_ = &info;
        names_.clear();
        values_.clear();
        tracks_.clear();
        device_clocks_.clear();
        first_host_ns_.reset();
        origin_ns_.reset();
        first_packet_ = true;
        process_uuid_ = next_uuid_++;

        pb::TracePacket& p = fresh_packet();
        auto* snapshot = p.mutable_clock_snapshot();
        snapshot->set_primary_trace_clock(pb::BUILTIN_CLOCK_MONOTONIC);
        auto* clock = snapshot->add_clocks();
        clock->set_clock_id(monotonic_clock);
        clock->set_timestamp(0);
        emit();

        pb::TracePacket& d = fresh_packet();
        auto* track = d.mutable_track_descriptor();
        track->set_uuid(process_uuid_);
        std::string name = std::to_string(index) + ": " + info.path;
        if (!info.backend.plugin.empty())
            name += " (" + info.backend.plugin + (info.backend.device_name.empty() ? "" : " on " + info.backend.device_name) + ")";
        track->mutable_process()->set_pid(static_cast<int32_t>(index + 1));
        track->mutable_process()->set_process_name(name);
        track->set_name(name);
        emit();
    }

    void window(const WindowRecord& w)
    {
        if (w.state == DurationState::failed) {
            ++counts_.failed;
            return;
        }
        if (!measured(w)) {
            ++counts_.not_measured;
            return;
        }
        const bool on_host = w.method == TimingMethod::system || w.domain == ClockDomain::host_monotonic;
        if (on_host && !first_host_ns_) {
            first_host_ns_ = w.start_ns;
            set_origin(w.start_ns - origin_margin_ns);
        }
        const uint32_t clock = on_host ? monotonic_clock : device_clock(w.stream, w.start_ns);
        Track& track = track_for(w);
        const uint32_t lane = track.lanes.place(w.start_ns, w.end_ns);
        while (track.lane_uuids.size() <= lane) open_lane(track);

        const uint64_t uuid = track.lane_uuids[lane];
        const auto queued = work_left_queued(w);
        if (!first_packet_ && !queued) {
            const auto name = names_.find(w.name);
            const auto method = values_.find(to_string(w.method));
            const auto state = values_.find(to_string(w.state));
            if (name != names_.end() && method != values_.end() && state != values_.end()) {
                // Nothing new to intern: the common case, encoded by hand.
                wire_begin(w.start_ns, clock, uuid, name->second, method->second, state->second);
                wire_end(w.end_ns, clock, uuid);
                ++counts_.written;
                return;
            }
        }

        pb::TracePacket& begin = fresh_packet();
        stamp(begin, w.start_ns, clock);
        pb::TrackEvent* e = begin.mutable_track_event();
        e->set_type(pb::TrackEvent::TYPE_SLICE_BEGIN);
        e->set_track_uuid(uuid);
        e->set_name_iid(intern_name(begin, w.name));
        annotate(begin, *e, ann_method, to_string(w.method));
        annotate(begin, *e, ann_state, to_string(w.state));
        if (queued) {
            auto* a = e->add_debug_annotations();
            a->set_name_iid(ann_work_left_queued);
            a->set_bool_value(*queued);
        }
        emit();

        pb::TracePacket& end = fresh_packet();
        stamp(end, w.end_ns, clock);
        end.mutable_track_event()->set_type(pb::TrackEvent::TYPE_SLICE_END);
        end.mutable_track_event()->set_track_uuid(uuid);
        emit();
        ++counts_.written;
    }

private:
    struct Track {
        std::string name;
        TrackLanes lanes;
        std::vector<uint64_t> lane_uuids;
    };

    pb::TracePacket& fresh_packet()
    {
        packet_.Clear();
        packet_.set_trusted_packet_sequence_id(sequence_);
        if (first_packet_) {
            packet_.set_sequence_flags(pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
            auto* interned = packet_.mutable_interned_data();
            const std::pair<AnnotationName, const char*> annotation_names[] = {
                {ann_method, "method"}, {ann_state, "state"},
                {ann_work_left_queued, "work_left_queued"}};
            for (const auto& [iid, text] : annotation_names) {
                auto* n = interned->add_debug_annotation_names();
                n->set_iid(iid);
                n->set_name(text);
            }
            // Packets without timestamp_clock_id count from the origin.
            packet_.mutable_trace_packet_defaults()->set_timestamp_clock_id(host_from_origin_clock);
            first_packet_ = false;
        }
        return packet_;
    }

    // The per-window BEGIN and END packets, encoded by hand with the field
    // numbers of the generated classes: the same bytes Serialize writes,
    // without building and clearing a message per event.
    static void put_varint(std::string& b, uint64_t v)
    {
        while (v >= 0x80) {
            b.push_back(static_cast<char>((v & 0x7f) | 0x80));
            v >>= 7;
        }
        b.push_back(static_cast<char>(v));
    }
    static void put_field(std::string& b, uint32_t field, uint64_t v)
    {
        put_varint(b, uint64_t{field} << 3);  // wire type 0: varint
        put_varint(b, v);
    }
    static void put_bytes(std::string& b, uint32_t field, const std::string& bytes)
    {
        put_varint(b, uint64_t{field} << 3 | 2);  // wire type 2: length-delimited
        put_varint(b, bytes.size());
        b += bytes;
    }
    void wire_stamp(std::string& b, int64_t ns, uint32_t clock)
    {
        if (clock == monotonic_clock && origin_ns_ && ns >= *origin_ns_) {
            put_field(b, pb::TracePacket::kTimestampFieldNumber, static_cast<uint64_t>(ns - *origin_ns_));
            return;
        }
        put_field(b, pb::TracePacket::kTimestampFieldNumber, static_cast<uint64_t>(ns));
        put_field(b, pb::TracePacket::kTimestampClockIdFieldNumber, clock);
    }
    void wire_packet(std::string& event)
    {
        packet_bytes_.clear();
        put_field(packet_bytes_, pb::TracePacket::kTrustedPacketSequenceIdFieldNumber, sequence_);
        packet_bytes_ += stamp_bytes_;
        put_bytes(packet_bytes_, pb::TracePacket::kTrackEventFieldNumber, event);
        frame_.clear();
        put_bytes(frame_, 1, packet_bytes_);  // Trace.packet
        out_.write(frame_.data(), static_cast<std::streamsize>(frame_.size()));
    }
    void wire_begin(int64_t ns, uint32_t clock, uint64_t uuid, uint64_t name_iid, uint64_t method_iid,
                    uint64_t state_iid)
    {
        event_.clear();
        put_field(event_, pb::TrackEvent::kTypeFieldNumber, pb::TrackEvent::TYPE_SLICE_BEGIN);
        put_field(event_, pb::TrackEvent::kTrackUuidFieldNumber, uuid);
        put_field(event_, pb::TrackEvent::kNameIidFieldNumber, name_iid);
        for (const auto& [name, value] : {std::pair{uint64_t{ann_method}, method_iid}, std::pair{uint64_t{ann_state}, state_iid}}) {
            annotation_.clear();
            put_field(annotation_, pb::DebugAnnotation::kNameIidFieldNumber, name);
            put_field(annotation_, pb::DebugAnnotation::kStringValueIidFieldNumber, value);
            put_bytes(event_, pb::TrackEvent::kDebugAnnotationsFieldNumber, annotation_);
        }
        stamp_bytes_.clear();
        put_field(stamp_bytes_, pb::TracePacket::kSequenceFlagsFieldNumber, pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
        wire_stamp(stamp_bytes_, ns, clock);
        wire_packet(event_);
    }
    void wire_end(int64_t ns, uint32_t clock, uint64_t uuid)
    {
        event_.clear();
        put_field(event_, pb::TrackEvent::kTypeFieldNumber, pb::TrackEvent::TYPE_SLICE_END);
        put_field(event_, pb::TrackEvent::kTrackUuidFieldNumber, uuid);
        stamp_bytes_.clear();
        wire_stamp(stamp_bytes_, ns, clock);
        wire_packet(event_);
    }

    // One Trace.packet field (number 1, length-delimited) per packet.
    void emit()
    {
        buffer_.clear();
        packet_.SerializeToString(&buffer_);
        char head[11];
        std::size_t n = 0;
        head[n++] = 0x0a;
        for (uint64_t v = buffer_.size();; v >>= 7) {
            if (v < 0x80) {
                head[n++] = static_cast<char>(v);
                break;
            }
            head[n++] = static_cast<char>((v & 0x7f) | 0x80);
        }
        out_.write(head, static_cast<std::streamsize>(n));
        out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    }

    uint64_t intern_name(pb::TracePacket& p, const std::string& name)
    {
        auto [it, added] = names_.try_emplace(name, names_.size() + 1);
        if (added) {
            auto* n = p.mutable_interned_data()->add_event_names();
            n->set_iid(it->second);
            n->set_name(name);
        }
        p.set_sequence_flags(p.sequence_flags() | pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
        return it->second;
    }

    void annotate(pb::TracePacket& p, pb::TrackEvent& e, AnnotationName name, const char* value)
    {
        auto [it, added] = values_.try_emplace(value, values_.size() + 1);
        if (added) {
            auto* s = p.mutable_interned_data()->add_debug_annotation_string_values();
            s->set_iid(it->second);
            s->set_str(value);
        }
        auto* a = e.add_debug_annotations();
        a->set_name_iid(name);
        a->set_string_value_iid(it->second);
    }

    // A stamp on `clock`; host stamps count from the origin (the default
    // clock) unless they come before it.
    void stamp(pb::TracePacket& p, int64_t ns, uint32_t clock)
    {
        if (clock == monotonic_clock && origin_ns_ && ns >= *origin_ns_) {
            p.set_timestamp(static_cast<uint64_t>(ns - *origin_ns_));
            return;
        }
        p.set_timestamp(static_cast<uint64_t>(ns));
        p.set_timestamp_clock_id(clock);
    }

    void set_origin(int64_t origin_ns)
    {
        origin_ns_ = origin_ns;
        pb::TracePacket& p = fresh_packet();
        auto* snapshot = p.mutable_clock_snapshot();
        snapshot->set_primary_trace_clock(pb::BUILTIN_CLOCK_MONOTONIC);
        auto* host = snapshot->add_clocks();
        host->set_clock_id(monotonic_clock);
        host->set_timestamp(static_cast<uint64_t>(origin_ns));
        auto* relative = snapshot->add_clocks();
        relative->set_clock_id(host_from_origin_clock);
        relative->set_timestamp(0);
        emit();
    }

    // The sequence-scoped clock of a device stream, announced by a
    // ClockSnapshot the first time the stream is seen.
    uint32_t device_clock(Stream stream, int64_t first_stamp_ns)
    {
        auto it = device_clocks_.find(stream);
        if (it != device_clocks_.end()) return it->second;
        if (device_clocks_.size() == device_clock_count)
            throw std::runtime_error("more than " + std::to_string(device_clock_count) +
                                     " streams on device clocks in " + info_->path +
                                     ": Perfetto's sequence-scoped clocks run out");
        const uint32_t id = first_device_clock + static_cast<uint32_t>(device_clocks_.size());
        device_clocks_.emplace(stream, id);
        ClockAnchor anchor{first_host_ns_.value_or(first_stamp_ns), first_stamp_ns};
        if (auto a = info_->device_clock_anchors.find(stream); a != info_->device_clock_anchors.end())
            anchor = a->second;
        pb::TracePacket& p = fresh_packet();
        auto* snapshot = p.mutable_clock_snapshot();
        snapshot->set_primary_trace_clock(pb::BUILTIN_CLOCK_MONOTONIC);
        auto* host = snapshot->add_clocks();
        host->set_clock_id(monotonic_clock);
        host->set_timestamp(static_cast<uint64_t>(anchor.host_ns));
        auto* device = snapshot->add_clocks();
        device->set_clock_id(id);
        device->set_timestamp(static_cast<uint64_t>(anchor.domain_ns));
        emit();
        return id;
    }

    Track& track_for(const WindowRecord& w)
    {
        // 0: thread, 1: stream on the host clock, 2: stream on its device clock.
        const int kind = w.method == TimingMethod::system ? 0 : w.domain == ClockDomain::host_monotonic ? 1 : 2;
        const uint64_t id = kind == 0 ? w.thread : w.stream;
        auto [it, added] = tracks_.try_emplace({kind, id});
        if (added) {
            const bool anchored = info_->device_clock_anchors.count(w.stream) != 0;
            it->second.name = kind == 0   ? "thread " + std::to_string(id)
                              : kind == 1 ? "stream " + std::to_string(id) + " (host clock)"
                              : anchored  ? "stream " + std::to_string(id) + " (device clock, anchored to host)"
                                          : "stream " + std::to_string(id) +
                                               " (device clock: own timeline, not aligned with host)";
        }
        return it->second;
    }

    void open_lane(Track& track)
    {
        const std::size_t lane = track.lane_uuids.size();
        const uint64_t uuid = next_uuid_++;
        track.lane_uuids.push_back(uuid);
        if (lane > 0) ++counts_.overlap_lanes;
        pb::TracePacket& p = fresh_packet();
        auto* d = p.mutable_track_descriptor();
        d->set_uuid(uuid);
        d->set_parent_uuid(process_uuid_);
        d->set_name(lane == 0 ? track.name : track.name + " (overlap " + std::to_string(lane) + ")");
        emit();
    }

    std::ostream& out_;
    ExportCounts& counts_;
    pb::TracePacket packet_;
    std::string buffer_;
    std::string event_, annotation_, stamp_bytes_, packet_bytes_, frame_;  // reused by the hand encoder
    uint32_t sequence_ = 0;
    bool first_packet_ = true;
    const InputInfo* info_ = nullptr;
    uint64_t next_uuid_ = 1;
    uint64_t process_uuid_ = 0;
    std::optional<int64_t> first_host_ns_;
    std::optional<int64_t> origin_ns_;
    std::unordered_map<std::string, uint64_t> names_;
    std::unordered_map<std::string, uint64_t> values_;
    std::map<std::pair<int, uint64_t>, Track> tracks_;
    std::map<Stream, uint32_t> device_clocks_;
};

}  // namespace

void write_perfetto_export(RecordSource& source, std::ostream& out, ExportCounts& counts)
{
    PerfettoWriter writer(out, counts);
    WindowRecord record;
    while (const auto index = source.next_input()) {
        writer.begin_input(*index, source.info());
        while (source.next_record(record)) writer.window(record);
    }
}

}  // namespace lapse::cli
