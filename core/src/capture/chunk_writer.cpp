// The capture writer's encoding (docs/capture-format.md).
#include "chunk_writer.hpp"

#include "format.hpp"

#include <algorithm>
#include <cstring>

namespace lapse::detail {

namespace fmt = capture_format;

namespace {

uint64_t load_u64(const char* p) noexcept
{
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

uint32_t load_u32(const char* p) noexcept
{
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

uint64_t mix(uint64_t h, uint64_t word) noexcept
{
    h = (h ^ word) * 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 31);
}

// A window's name is hashed on every record, so whole words, not bytes:
// eight at a time, the tail as two overlapping 4-byte loads (or its first,
// middle and last byte). Only ever compared within this process.
uint64_t hash_of(std::string_view s) noexcept
{
    const char* p = s.data();
    std::size_t n = s.size();
    uint64_t h = mix(0x9e3779b97f4a7c15ull, n);
    for (; n >= 8; p += 8, n -= 8) h = mix(h, load_u64(p));
    if (n >= 4)
        h = mix(h, uint64_t{load_u32(p)} << 32 | load_u32(p + n - 4));
    else if (n > 0)
        h = mix(h, uint64_t{static_cast<unsigned char>(p[0])} << 16 |
                       uint64_t{static_cast<unsigned char>(p[n / 2])} << 8 | static_cast<unsigned char>(p[n - 1]));
    return h;
}

// A record's fields in their largest encoding: the first byte and ten
// varints (the cause's string index among them).
constexpr std::size_t max_record_bytes = 1 + 10 * wire::max_varint_bytes;

std::string_view bounded(std::string_view s) noexcept { return s.substr(0, fmt::max_string); }

}  // namespace

void ChunkWriter::emit(uint8_t type, std::string_view payload)
{
    scratch_.clear();
    scratch_.append(reinterpret_cast<const char*>(fmt::sync), sizeof fmt::sync);
    wire::Writer head;
    head.u8(type);
    head.u8(0);
    head.u8(0);
    head.u8(0);
    head.u32le(static_cast<uint32_t>(payload.size()));
    uint32_t crc = wire::crc32c(0, head.bytes.data(), head.bytes.size());
    crc = wire::crc32c(crc, payload.data(), payload.size());
    head.u32le(crc);
    scratch_.append(head.bytes);
    scratch_.append(payload);
    sink_.write(std::as_bytes(std::span(scratch_.data(), scratch_.size())));
    bytes_ += scratch_.size();
    ++chunks_;
}

void ChunkWriter::write_magic()
{
    sink_.write(std::as_bytes(std::span(fmt::magic)));
    bytes_ += sizeof fmt::magic;
}

void ChunkWriter::write_header(const CaptureHeader& h)
{
    wire::Writer w;
    w.varint(fmt::version);
    w.str(bounded(h.host));
    w.varint(h.pid);
    w.svarint(h.anchor_monotonic_ns);
    w.svarint(h.anchor_realtime_ns);
    w.str(bounded(h.program));
    emit(fmt::chunk_header, w.bytes);
}

void ChunkWriter::write_source(const CaptureSource& s, int64_t now_ns)
{
    wire::Writer w;
    w.svarint(now_ns);
    w.varint(s.id);
    for (const std::string* text : {&s.plugin, &s.plugin_version, &s.plugin_file, &s.device_name, &s.stack})
        w.str(bounded(*text));
    w.varint(s.stream_count);
    w.varint(s.capabilities);
    w.varint(s.stream_domains.size());
    for (ClockDomain d : s.stream_domains) w.u8(static_cast<uint8_t>(d));
    emit(fmt::chunk_source, w.bytes);
}

uint32_t ChunkWriter::intern(std::string_view s)
{
    s = bounded(s);
    if (slots_.empty()) slots_.assign(64, 0);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash_of(s) & mask;; i = (i + 1) & mask) {
        const uint32_t slot = slots_[i];
        if (slot == 0) {
            const uint32_t index = string_count_++;
            const std::size_t before = strings_.bytes.size();
            strings_.str(s);
            const std::size_t len_bytes = strings_.bytes.size() - before - s.size();
            string_spans_.emplace_back(static_cast<uint32_t>(before + len_bytes), static_cast<uint32_t>(s.size()));
            slots_[i] = index + 1;
            if (string_count_ * 2 > slots_.size()) {
                // Grow and rehash (kept under half full).
                std::vector<uint32_t> old(slots_.size() * 2, 0);
                slots_.swap(old);
                const std::size_t m = slots_.size() - 1;
                for (uint32_t k = 0; k < string_count_; ++k) {
                    auto [at, size] = string_spans_[k];
                    std::size_t j = hash_of(std::string_view(strings_.bytes).substr(at, size)) & m;
                    while (slots_[j] != 0) j = (j + 1) & m;
                    slots_[j] = k + 1;
                }
            }
            return index;
        }
        auto [at, size] = string_spans_[slot - 1];
        if (size == s.size() && std::memcmp(strings_.bytes.data() + at, s.data(), size) == 0) return slot - 1;
    }
}

uint32_t ChunkWriter::name_id(std::string_view name, const InternedName* interned)
{
    if (interned == nullptr) return intern(name);
    if (interned->index >= by_name_.size()) {
        by_name_.resize(interned->index + 1, 0);
    } else if (const uint64_t known = by_name_[interned->index]; known >> 32 == chunk_epoch_) {
        return static_cast<uint32_t>(known);
    }
    const uint32_t id = intern(name);
    by_name_[interned->index] = uint64_t{chunk_epoch_} << 32 | id;
    return id;
}

void ChunkWriter::add(const CapturedWindow& w, const InternedName* interned, int64_t now_ns)
{
    if (body_.size() < body_size_ + max_record_bytes)
        body_.resize(std::max(body_size_, fmt::target_payload) + max_record_bytes);
    unsigned char* const begin = body_.data() + body_size_;
    unsigned char* p = begin;
    const bool elsewhere = w.close_thread != w.thread;
    const auto state = static_cast<uint8_t>(w.state) & 3, method = static_cast<uint8_t>(w.method) & 3,
               domain = static_cast<uint8_t>(w.domain) & 3;
    *p++ = static_cast<uint8_t>(state << fmt::state_shift | method << fmt::method_shift | domain << fmt::domain_shift |
                                (elsewhere ? fmt::closed_elsewhere : 0));
    p = wire::put_varint(p, name_id(w.name, interned));
    p = wire::put_varint(p, w.source);
    p = wire::put_varint(p, w.stream);
    p = wire::put_svarint(p, static_cast<int64_t>(w.thread - prev_thread_));
    prev_thread_ = w.thread;
    if (elsewhere) p = wire::put_svarint(p, static_cast<int64_t>(w.close_thread - w.thread));
    if (w.state == DurationState::ready) {
        // Wrapping arithmetic: any pair of stamps encodes, none overflows.
        p = wire::put_svarint(
            p, static_cast<int64_t>(static_cast<uint64_t>(w.start_ns) - static_cast<uint64_t>(prev_start_[domain])));
        prev_start_[domain] = w.start_ns;
        p = wire::put_svarint(p, w.end_ns >= w.start_ns ? static_cast<int64_t>(static_cast<uint64_t>(w.end_ns) -
                                                                                static_cast<uint64_t>(w.start_ns))
                                                         : 0);
    }
    if (w.state == DurationState::failed) p = wire::put_svarint(p, w.failure);
    if (w.state == DurationState::failed || w.state == DurationState::not_measured)
        p = wire::put_varint(p, w.cause.empty() ? 0 : uint64_t{intern(w.cause)} + 1);
    p = wire::put_varint(p, w.flags);
    body_size_ += static_cast<std::size_t>(p - begin);
    ++records_;
    if (open_bytes() >= fmt::target_payload) write_windows(now_ns);
}

void ChunkWriter::write_windows(int64_t now_ns)
{
    if (records_ == 0) return;
    wire::Writer w;
    w.bytes.reserve(open_bytes() + 32);
    w.svarint(now_ns);
    w.varint(string_count_);
    w.bytes.append(strings_.bytes);
    w.varint(records_);
    w.bytes.append(reinterpret_cast<const char*>(body_.data()), body_size_);
    emit(fmt::chunk_windows, w.bytes);
    reset_chunk();
}

void ChunkWriter::reset_chunk()
{
    strings_.bytes.clear();
    body_size_ = 0;
    string_count_ = 0;
    records_ = 0;
    string_spans_.clear();
    std::fill(slots_.begin(), slots_.end(), 0);
    ++chunk_epoch_;  // every Name is looked up again
    prev_thread_ = 0;
    std::fill(std::begin(prev_start_), std::end(prev_start_), 0);
}

void ChunkWriter::write_drops(const std::vector<std::pair<std::string, uint64_t>>& counts, int64_t now_ns)
{
    // Several chunks when the list is long, each well under the limit.
    std::size_t at = 0;
    while (at < counts.size()) {
        wire::Writer body;
        std::size_t n = 0;
        for (std::size_t i = at; i < counts.size() && body.bytes.size() < fmt::target_payload; ++i, ++n) {
            body.str(bounded(counts[i].first));
            body.varint(counts[i].second);
        }
        wire::Writer w;
        w.svarint(now_ns);
        w.varint(n);
        w.bytes.append(body.bytes);
        emit(fmt::chunk_drops, w.bytes);
        at += n;
    }
}

void ChunkWriter::write_end(uint64_t recorded, uint64_t dropped, int64_t now_ns)
{
    wire::Writer w;
    w.svarint(now_ns);
    w.varint(recorded);
    w.varint(dropped);
    emit(fmt::chunk_end, w.bytes);
}

}  // namespace lapse::detail
