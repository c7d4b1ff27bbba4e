// The protobuf wire format, by hand, for the packets the Perfetto writer
// writes per window: the same bytes a generated class's Serialize writes
// for the same fields, without building and clearing a message per event.
// Field numbers come from the generated classes (perfetto_trace.pb.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
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

// The same encodings into raw memory, for the per-window packets: the
// caller sizes the memory first (varint_size), so nothing is checked or
// grown per byte.
constexpr std::size_t varint_size(uint64_t v)
{
    std::size_t n = 1;
    for (; v >= 0x80; v >>= 7) ++n;
    return n;
}

[[gnu::always_inline]] inline char* put_varint(char* p, uint64_t v)
{
    for (; v >= 0x80; v >>= 7) *p++ = static_cast<char>((v & 0x7f) | 0x80);
    *p++ = static_cast<char>(v);
    return p;
}

[[gnu::always_inline]] inline char* put_field(char* p, uint32_t number, uint64_t v)
{
    return put_varint(put_varint(p, uint64_t{number} << 3), v);
}

[[gnu::always_inline]] inline char* put_bytes(char* p, uint32_t number, std::string_view s)
{
    p = put_varint(put_varint(p, uint64_t{number} << 3 | 2), s.size());
    std::memcpy(p, s.data(), s.size());
    return p + s.size();
}

constexpr std::size_t field_size(uint32_t number, uint64_t v) { return varint_size(uint64_t{number} << 3) + varint_size(v); }
constexpr std::size_t bytes_size(uint32_t number, std::size_t n)
{
    return varint_size(uint64_t{number} << 3 | 2) + varint_size(n) + n;
}

// A small message (a TrackEvent, a DebugAnnotation) encoded into a fixed
// array; longer than N is a programming error, refused with an exception.
template <std::size_t N>
class Small {
public:
    void clear() { size_ = 0; }
    std::string_view view() const { return {data_, size_}; }
    std::size_t size() const { return size_; }
    [[gnu::always_inline]] void field(uint32_t number, uint64_t v)
    {
        room(20);
        size_ = static_cast<std::size_t>(put_field(data_ + size_, number, v) - data_);
    }
    void fixed64(uint32_t number, uint64_t v)
    {
        room(20);
        char* p = put_varint(data_ + size_, uint64_t{number} << 3 | 1);
        for (int i = 0; i < 8; ++i) *p++ = static_cast<char>(v >> (8 * i));
        size_ = static_cast<std::size_t>(p - data_);
    }
    void bytes(uint32_t number, std::string_view s)
    {
        room(20 + s.size());
        size_ = static_cast<std::size_t>(put_bytes(data_ + size_, number, s) - data_);
    }

private:
    [[gnu::always_inline]] void room(std::size_t n) const
    {
        if (size_ + n > N) [[unlikely]]
            too_long();
    }
    [[noreturn, gnu::cold, gnu::noinline]] static void too_long()
    {
        throw std::length_error("perfetto export: an event longer than " + std::to_string(N) + " bytes");
    }
    char data_[N];
    std::size_t size_ = 0;
};

}  // namespace lapse::cli::wire
