// Internal: the capture file's byte-level encoding. Everything is written
// byte by byte (little-endian fixed fields, LEB128 varints, zigzag for
// signed values), so a file reads the same on any architecture.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lapse::detail::wire {

// CRC-32C (Castagnoli), the checksum of every chunk.
uint32_t crc32c(uint32_t crc, const void* data, std::size_t size) noexcept;

inline uint64_t zigzag(int64_t v) noexcept { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t unzigzag(uint64_t v) noexcept { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// Writes a varint at `p`, unchecked, and returns the byte after it: for a
// record encoded into a buffer sized for its largest form (ten bytes a varint).
inline unsigned char* put_varint(unsigned char* p, uint64_t v) noexcept
{
    while (v >= 0x80) {
        *p++ = static_cast<unsigned char>(v | 0x80);
        v >>= 7;
    }
    *p++ = static_cast<unsigned char>(v);
    return p;
}
inline unsigned char* put_svarint(unsigned char* p, int64_t v) noexcept { return put_varint(p, zigzag(v)); }
inline constexpr std::size_t max_varint_bytes = 10;

// Appends to a growing byte string.
class Writer {
public:
    std::string bytes;

    void u8(uint8_t v) { bytes.push_back(static_cast<char>(v)); }
    void u32le(uint32_t v)
    {
        for (int i = 0; i < 4; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
    }
    void varint(uint64_t v)
    {
        while (v >= 0x80) {
            u8(static_cast<uint8_t>(v) | 0x80);
            v >>= 7;
        }
        u8(static_cast<uint8_t>(v));
    }
    void svarint(int64_t v) { varint(zigzag(v)); }
    void str(std::string_view s)
    {
        varint(s.size());
        bytes.append(s);
    }
};

// Reads a bounded byte range; any read past its end sets failed() and
// yields zeros, so a decoder checks once per record instead of per field.
class Reader {
public:
    Reader() noexcept = default;
    Reader(const unsigned char* data, std::size_t size) noexcept : at_(data), end_(data + size) {}

    bool failed() const noexcept { return failed_; }
    bool done() const noexcept { return at_ == end_; }
    std::size_t left() const noexcept { return static_cast<std::size_t>(end_ - at_); }

    uint8_t u8() noexcept
    {
        if (at_ == end_) return fail(), 0;
        return *at_++;
    }
    uint64_t varint() noexcept
    {
        uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (at_ == end_) return fail(), 0;
            const uint8_t b = *at_++;
            v |= static_cast<uint64_t>(b & 0x7f) << shift;
            if ((b & 0x80) == 0) return v;
        }
        return fail(), 0;  // more than ten bytes: not a varint we wrote
    }
    int64_t svarint() noexcept { return unzigzag(varint()); }
    // A string of at most `limit` bytes, viewing the range (no copy).
    std::string_view str(std::size_t limit) noexcept
    {
        const uint64_t n = varint();
        if (failed_ || n > left() || n > limit) return fail(), std::string_view{};
        std::string_view s(reinterpret_cast<const char*>(at_), static_cast<std::size_t>(n));
        at_ += n;
        return s;
    }
    void fail() noexcept
    {
        failed_ = true;
        at_ = end_;
    }

private:
    const unsigned char* at_ = nullptr;
    const unsigned char* end_ = nullptr;
    bool failed_ = false;
};

inline uint32_t load_u32le(const unsigned char* p) noexcept
{
    return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

}  // namespace lapse::detail::wire
