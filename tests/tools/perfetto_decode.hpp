// A Perfetto trace decoded the way Perfetto's importer reads one, for the
// tests of `lapse export --format perfetto`: per sequence, its incremental
// state (cleared by SEQ_INCREMENTAL_STATE_CLEARED), interned names,
// packet defaults (clock, track) and sequence-scoped clocks, incremental
// ones counting from their ClockSnapshot; then every BEGIN/END sorted
// stably by host time with a stack per track, as a slice-stack viewer does.
#pragma once

#include "perfetto_trace.pb.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace lapse::test {

struct Slice {
    std::string track;  // the base track's name (without " (overlap N)")
    std::string name;
    int64_t start;
    int64_t end;
    std::size_t input;  // the process track's pid - 1
    auto operator<=>(const Slice&) const = default;
};

// A flow between two instants (split pairs: "open NAME" -> "close NAME").
struct Flow {
    std::string from_track, from_name;
    int64_t from_ns;
    std::string to_track, to_name;
    int64_t to_ns;
    auto operator<=>(const Flow&) const = default;
};

struct DecodedTrace {
    std::vector<Slice> slices;  // sorted
    std::vector<Flow> flows;    // sorted
    // (window name, annotation name, value) of every BEGIN's debug annotations.
    std::vector<std::tuple<std::string, std::string, std::string>> annotations;
    std::size_t sequences = 0;
};

inline std::string base_track(const std::string& name)
{
    const auto at = name.find(" (overlap ");
    return at == std::string::npos ? name : name.substr(0, at);
}

inline DecodedTrace decode_perfetto(const perfetto::protos::Trace& trace)
{
    namespace pb = perfetto::protos;
    struct Clock {
        int64_t host_minus_clock = 0;
        bool incremental = false;
        int64_t last = 0;
    };
    struct SequenceState {
        bool cleared = false;  // SEQ_INCREMENTAL_STATE_CLEARED seen
        std::map<uint64_t, std::string> names, annotation_names;
        std::map<uint32_t, Clock> clocks;
        uint32_t default_clock = 0;
        uint64_t default_track = 0;
    };
    struct TrackInfo {
        std::string name;
        uint64_t parent = 0;
    };
    std::map<uint32_t, SequenceState> sequences;
    std::map<uint64_t, TrackInfo> tracks;
    std::map<uint64_t, int32_t> pids;
    struct Event {
        int64_t ts;
        bool begin;
        uint64_t track;
        std::string name;
    };
    std::vector<Event> events;
    struct End {
        uint64_t track;
        std::string name;
        int64_t ns;
    };
    std::map<uint64_t, End> flow_from, flow_to;
    DecodedTrace out;

    for (const pb::TracePacket& p : trace.packet()) {
        const uint32_t seq = p.trusted_packet_sequence_id();
        if (p.has_clock_snapshot() && seq == 0) continue;  // the trace's clock, before any sequence
        REQUIRE(seq != 0);
        if ((p.sequence_flags() & pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED) != 0)
        {
            sequences[seq] = SequenceState{};
            sequences[seq].cleared = true;
        }
        SequenceState& s = sequences[seq];
        if ((p.sequence_flags() & pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE) != 0) REQUIRE(s.cleared);
        if (p.has_interned_data()) {
            for (const auto& n : p.interned_data().event_names()) s.names[n.iid()] = n.name();
            for (const auto& n : p.interned_data().debug_annotation_names()) s.annotation_names[n.iid()] = n.name();
        }
        if (p.has_trace_packet_defaults()) {
            s.default_clock = p.trace_packet_defaults().timestamp_clock_id();
            s.default_track = p.trace_packet_defaults().track_event_defaults().track_uuid();
        }
        if (p.has_track_descriptor()) {
            const auto& d = p.track_descriptor();
            tracks[d.uuid()] = {d.name(), d.parent_uuid()};
            if (d.has_process()) pids[d.uuid()] = d.process().pid();
        }
        if (p.has_clock_snapshot()) {
            CHECK(p.clock_snapshot().primary_trace_clock() == pb::BUILTIN_CLOCK_MONOTONIC);
            int64_t host = 0;
            for (const auto& c : p.clock_snapshot().clocks())
                if (c.clock_id() == pb::BUILTIN_CLOCK_MONOTONIC) host = static_cast<int64_t>(c.timestamp());
            for (const auto& c : p.clock_snapshot().clocks())
                if (c.clock_id() >= 64)
                    s.clocks[c.clock_id()] = {host - static_cast<int64_t>(c.timestamp()), c.is_incremental(),
                                              static_cast<int64_t>(c.timestamp())};
        }
        if (!p.has_track_event()) continue;
        const pb::TrackEvent& e = p.track_event();
        const uint32_t clock_id = p.has_timestamp_clock_id() ? p.timestamp_clock_id() : s.default_clock;
        int64_t ts = static_cast<int64_t>(p.timestamp());
        if (clock_id != pb::BUILTIN_CLOCK_MONOTONIC) {
            REQUIRE(clock_id >= 64);
            REQUIRE(s.clocks.count(clock_id) == 1);  // a snapshot on this sequence came first
            Clock& c = s.clocks[clock_id];
            if (c.incremental) ts = c.last += ts;
            ts += c.host_minus_clock;
        }
        const uint64_t track = e.has_track_uuid() ? e.track_uuid() : s.default_track;
        REQUIRE(tracks.count(track) == 1);  // described before use
        std::string name;
        if (e.type() != pb::TrackEvent::TYPE_SLICE_END) {
            REQUIRE(s.names.count(e.name_iid()) == 1);
            name = s.names[e.name_iid()];
        }
        if (e.type() == pb::TrackEvent::TYPE_INSTANT) {
            for (uint64_t id : e.flow_ids()) flow_from[id] = {track, name, ts};
            for (uint64_t id : e.terminating_flow_ids()) flow_to[id] = {track, name, ts};
            continue;
        }
        REQUIRE((e.type() == pb::TrackEvent::TYPE_SLICE_BEGIN || e.type() == pb::TrackEvent::TYPE_SLICE_END));
        const bool begin = e.type() == pb::TrackEvent::TYPE_SLICE_BEGIN;
        if (begin)
            for (const auto& a : e.debug_annotations()) {
                REQUIRE(s.annotation_names.count(a.name_iid()) == 1);
                const std::string value = a.has_bool_value() ? (a.bool_value() ? "true" : "false") : a.string_value();
                out.annotations.emplace_back(name, s.annotation_names[a.name_iid()], value);
            }
        events.push_back({ts, begin, track, std::move(name)});
    }
    out.sequences = sequences.size();

    std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.ts < b.ts; });
    std::map<uint64_t, std::vector<const Event*>> open;
    for (const Event& e : events) {
        auto& stack = open[e.track];
        if (e.begin) {
            stack.push_back(&e);
            continue;
        }
        REQUIRE(!stack.empty());  // an END with nothing open: mis-nested
        const Event* b = stack.back();
        stack.pop_back();
        const TrackInfo& t = tracks[e.track];
        REQUIRE(pids.count(t.parent) == 1);
        out.slices.push_back({base_track(t.name), b->name, b->ts, e.ts, static_cast<std::size_t>(pids[t.parent] - 1)});
    }
    for (const auto& [track, stack] : open) CHECK(stack.empty());
    std::sort(out.slices.begin(), out.slices.end());

    CHECK(flow_from.size() == flow_to.size());
    for (const auto& [id, from] : flow_from) {
        REQUIRE(flow_to.count(id) == 1);
        const End& to = flow_to[id];
        out.flows.push_back({tracks[from.track].name, from.name, from.ns, tracks[to.track].name, to.name, to.ns});
    }
    std::sort(out.flows.begin(), out.flows.end());
    return out;
}

inline std::vector<Slice> rebuild(const perfetto::protos::Trace& trace) { return decode_perfetto(trace).slices; }

}  // namespace lapse::test
