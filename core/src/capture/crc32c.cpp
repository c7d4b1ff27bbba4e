// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), table-driven,
// eight bytes per step ("slicing by 8"): fast enough that checksumming
// never limits writing or reading a capture.
#include "wire.hpp"

#include <array>

namespace lapse::detail::wire {
namespace {

using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables make_tables()
{
    Tables t{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
        for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    return t;
}

constexpr Tables tables = make_tables();

}  // namespace

uint32_t crc32c(uint32_t crc, const void* data, std::size_t size) noexcept
{
    const auto* p = static_cast<const unsigned char*>(data);
    crc = ~crc;
    while (size >= 8) {
        const uint32_t lo = (uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24) ^ crc;
        crc = tables[7][lo & 0xff] ^ tables[6][(lo >> 8) & 0xff] ^ tables[5][(lo >> 16) & 0xff] ^ tables[4][lo >> 24] ^
              tables[3][p[4]] ^ tables[2][p[5]] ^ tables[1][p[6]] ^ tables[0][p[7]];
        p += 8;
        size -= 8;
    }
    while (size-- > 0) crc = (crc >> 8) ^ tables[0][(crc ^ *p++) & 0xff];
    return ~crc;
}

}  // namespace lapse::detail::wire
