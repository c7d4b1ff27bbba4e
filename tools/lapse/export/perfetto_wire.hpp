// The protobuf wire format, by hand, for the packets the Perfetto writer
// writes per window: the same bytes a generated class's Serialize writes
// for the same fields, without building and clearing a message per event.
// Field numbers come from the generated classes (perfetto_trace.pb.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lapse::cli::wire {

[[gnu::always_inline]] inline void varint(std::string& b, uint64_t v)
{
    char out[10];
    std::size_t n = 0;
    for (; v >= 0x80; v >>= 7) out[n++] = static_cast<char>((v & 0x7f) | 0x80);
    out[n++] = static_cast<char>(v);
    b.append(out, n);
}

// Wire type 0: an integer, bool or enum.
[[gnu::always_inline]] inline void field(std::string& b, uint32_t number, uint64_t v)
{
    varint(b, uint64_t{number} << 3);
    varint(b, v);
}

// Wire type 1: a fixed64, little-endian.
inline void fixed64(std::string& b, uint32_t number, uint64_t v)
{
    varint(b, uint64_t{number} << 3 | 1);
    for (int i = 0; i < 8; ++i) b.push_back(static_cast<char>(v >> (8 * i)));
}

// Wire type 2: bytes, a string or an embedded message.
[[gnu::always_inline]] inline void bytes(std::string& b, uint32_t number, std::string_view s)
{
    varint(b, uint64_t{number} << 3 | 2);
    varint(b, s.size());
    b.append(s);
}

}  // namespace lapse::cli::wire
