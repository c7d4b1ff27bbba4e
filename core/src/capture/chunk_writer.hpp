// Internal: encodes capture chunks and hands them to the sink. Used by the
// collector thread only (one writer per capture, no locking).
#pragma once

#include "../interned_name.hpp"
#include "wire.hpp"

#include <lapse/core/capture.hpp>

#include <string_view>
#include <utility>
#include <vector>

namespace lapse::detail {

class ChunkWriter {
public:
    explicit ChunkWriter(CaptureSink& sink) : sink_(sink) {}

    void write_magic();
    void write_header(const CaptureHeader& header);
    void write_source(const CaptureSource& source, int64_t now_ns);
    // Appends a window to the open windows chunk; the chunk is written when
    // it reaches its target size. `interned`: the entry of the lapse::Name
    // that named it (w.name is its text), or null.
    void add(const CapturedWindow& w, const InternedName* interned, int64_t now_ns);
    bool has_windows() const noexcept { return records_ > 0; }
    void write_windows(int64_t now_ns);
    // Cumulative drop counts of the names that changed.
    void write_drops(const std::vector<std::pair<std::string, uint64_t>>& counts, int64_t now_ns);
    void write_end(uint64_t recorded, uint64_t dropped, int64_t now_ns);

    uint64_t bytes_written() const noexcept { return bytes_; }
    uint64_t chunks() const noexcept { return chunks_; }
    // Payload bytes in the open windows chunk.
    std::size_t open_bytes() const noexcept { return strings_.bytes.size() + body_size_; }

private:
    void emit(uint8_t type, std::string_view payload);
    uint32_t intern(std::string_view s);
    // intern() of a window's name; a Name's entry is looked up by its
    // index, without hashing its text.
    uint32_t name_id(std::string_view name, const InternedName* interned);
    void reset_chunk();

    CaptureSink& sink_;
    uint64_t bytes_ = 0, chunks_ = 0;

    // The open windows chunk: its own string table (so every chunk decodes
    // alone, whatever was lost before it) and its records. The records are
    // encoded straight into body_, kept at least one largest record longer
    // than body_size_, so add() writes with no check per byte.
    wire::Writer strings_;
    std::vector<unsigned char> body_;
    std::size_t body_size_ = 0;
    uint32_t string_count_ = 0;
    uint64_t records_ = 0;
    std::vector<std::pair<uint32_t, uint32_t>> string_spans_;  // offset, size of each string's bytes in strings_
    std::vector<uint32_t> slots_;                               // open addressing: index + 1, 0 empty
    // By a Name's index: the chunk (chunk_epoch_) that interned it, in the
    // high half, and its string id there.
    std::vector<uint64_t> by_name_;
    uint32_t chunk_epoch_ = 1;
    uint64_t prev_thread_ = 0;
    int64_t prev_start_[4] = {0, 0, 0, 0};
    std::string scratch_;
};

}  // namespace lapse::detail
