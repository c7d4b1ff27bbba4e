// Internal: the capture file's layout (docs/capture-format.md is the
// reference; keep the two in step).
//
//   file   = magic chunk*
//   magic  = "LAPSECAP" (8 bytes)
//   chunk  = sync "LCHK" | type u8 | 3 zero bytes | size u32le | crc u32le | payload[size]
//            crc = CRC-32C over the 8 bytes type..size, then the payload
#pragma once

#include <cstddef>
#include <cstdint>

namespace lapse::detail::capture_format {

inline constexpr char magic[8] = {'L', 'A', 'P', 'S', 'E', 'C', 'A', 'P'};
inline constexpr unsigned char sync[4] = {'L', 'C', 'H', 'K'};
inline constexpr std::size_t chunk_header_size = 16;
// What a writer emits at most, and what a reader accepts: a bigger size
// field is damage (it bounds what one chunk makes a reader allocate).
inline constexpr std::size_t max_payload = 1u << 20;
// The writer closes a windows chunk when its payload passes this.
inline constexpr std::size_t target_payload = 64u << 10;
// Longest name or message a capture holds; longer ones are cut.
inline constexpr std::size_t max_string = 4096;

inline constexpr uint32_t version = 1;

enum ChunkType : uint8_t {
    chunk_header = 1,   // format version, host, pid, program, clock anchor
    chunk_source = 2,   // one device: backend stack, streams, clock domains
    chunk_windows = 3,  // a string table, then window records
    chunk_drops = 4,    // dropped windows per name, cumulative since the start
    chunk_end = 5,      // the capture was closed: totals
};

// A window record's first byte.
inline constexpr unsigned state_shift = 0;    // 2 bits: DurationState
inline constexpr unsigned method_shift = 2;   // 2 bits: TimingMethod
inline constexpr unsigned domain_shift = 4;   // 2 bits: ClockDomain
inline constexpr uint8_t closed_elsewhere = 1u << 6;  // the close thread differs from the open one
inline constexpr uint8_t head_reserved = 1u << 7;     // zero in version 1

}  // namespace lapse::detail::capture_format
