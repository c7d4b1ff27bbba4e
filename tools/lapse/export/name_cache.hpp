// A small cache in front of a sequence's interned-name table: most windows
// reuse a handful of names, and hashing each window's name in full
// (std::hash over the bytes, then a string compare) costs more than the
// rest of its BEGIN packet. A name of at most 16 bytes is its own key,
// read with a few fixed-size loads (its length and up to 16 bytes, the
// two halves overlapping for lengths 9..15), so a hit compares three words
// and no bytes; longer names are not cached.
//
// Thread safety: one thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace lapse::cli {

class NameCache {
public:
    struct Key {
        uint64_t size = UINT64_MAX;  // UINT64_MAX: not cacheable (or an empty entry)
        uint64_t low = 0, high = 0;
        bool operator==(const Key& o) const { return size == o.size && low == o.low && high == o.high; }
    };

    static Key key(std::string_view name)
    {
        const std::size_t n = name.size();
        const char* p = name.data();
        Key k;
        if (n > 16) return k;
        k.size = n;
        if (n >= 8) {
            k.low = load<uint64_t>(p);
            k.high = load<uint64_t>(p + n - 8);
        } else if (n >= 4) {
            k.low = load<uint32_t>(p);
            k.high = load<uint32_t>(p + n - 4);
        } else if (n > 0) {
            k.low = static_cast<unsigned char>(p[0]) | uint64_t{static_cast<unsigned char>(p[n / 2])} << 8 |
                    uint64_t{static_cast<unsigned char>(p[n - 1])} << 16;
        }
        return k;
    }

    // The value put for `k`, or 0 when none is cached.
    uint64_t find(const Key& k) const
    {
        if (k.size == UINT64_MAX) return 0;
        const Entry& e = entries_[slot(k)];
        return e.key == k ? e.value : 0;
    }

    // Remembers `value` (not 0) for `k`, in place of what shared its slot.
    void put(const Key& k, uint64_t value)
    {
        if (k.size == UINT64_MAX) return;
        entries_[slot(k)] = Entry{k, value};
    }

private:
    static constexpr std::size_t slots = 64;
    struct Entry {
        Key key;
        uint64_t value = 0;
    };
    template <class T>
    static uint64_t load(const char* p)
    {
        T v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }
    static std::size_t slot(const Key& k)
    {
        const uint64_t h = (k.low ^ (k.high * 0x9e3779b97f4a7c15ull) ^ k.size) * 0xff51afd7ed558ccdull;
        return static_cast<std::size_t>(h >> 58);  // the top 6 bits: 64 slots
    }
    std::array<Entry, slots> entries_{};
};

}  // namespace lapse::cli
