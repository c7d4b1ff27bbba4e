// lapse::CaptureReader: streams a capture chunk by chunk in constant
// memory. A chunk is trusted only after its checksum matched; anything
// else is damage: reported with its offset, then skipped by scanning for
// the next chunk that checks out, so damaged bytes are never read as data.
#include "format.hpp"
#include "wire.hpp"

#include <lapse/core/capture.hpp>
#include <lapse/core/error.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <istream>

namespace lapse {

namespace fmt = detail::capture_format;
using detail::wire::Reader;

namespace {

// Bounds on what a (possibly hostile) file can make the reader keep.
constexpr std::size_t max_sources = 4096;
constexpr std::size_t max_drop_names = 1u << 16;
constexpr std::size_t read_block = 256u << 10;

[[noreturn]] void refuse(const std::string& source, const std::string& why)
{
    throw Error(LAPSE_ERROR_INVALID_ARGUMENT, source + ": " + why);
}

bool valid_domain(uint64_t d) { return d <= static_cast<uint64_t>(ClockDomain::device); }

}  // namespace

struct CaptureReader::Impl {
    std::unique_ptr<std::istream> in;
    std::string name;

    // Bytes read from the file and not consumed yet: buf[begin, end) is
    // the file from offset `offset` on.
    std::vector<unsigned char> buf;
    std::size_t begin = 0, end = 0;
    uint64_t offset = 0;
    bool eof = false;

    CaptureHeader header;
    bool have_header = false;
    std::vector<CaptureSource> sources;
    std::map<std::string, uint64_t, std::less<>> drops;
    std::vector<CaptureDrop> drop_list;
    uint64_t drop_total = 0;
    std::vector<CaptureDamage> damage;
    bool complete = false;
    int64_t last_chunk_ns = 0;
    uint64_t windows = 0;
    uint64_t chunks = 0;
    bool finished = false;

    // Damage in progress: the bytes from here are being skipped.
    bool skipping = false;
    uint64_t skip_from = 0;
    std::string skip_cause;

    // The windows chunk being decoded.
    std::vector<unsigned char> chunk;
    uint64_t chunk_offset = 0;
    Reader records;
    uint64_t records_left = 0;
    uint64_t record_index = 0;
    std::vector<std::string_view> strings;
    uint64_t prev_thread = 0;
    int64_t prev_start[4] = {0, 0, 0, 0};

    std::size_t avail() const { return end - begin; }

    // Makes at least `n` bytes available; false at the end of the file.
    bool ensure(std::size_t n)
    {
        while (avail() < n && !eof) {
            if (begin > 0 && (begin >= buf.size() / 2 || buf.size() - end < read_block)) {
                std::memmove(buf.data(), buf.data() + begin, avail());
                end -= begin;
                offset += begin;
                begin = 0;
            }
            if (buf.size() - end < read_block) buf.resize(std::max(buf.size() * 2, end + read_block));
            in->read(reinterpret_cast<char*>(buf.data() + end), static_cast<std::streamsize>(read_block));
            std::streamsize got = in->gcount();
            if (got <= 0) eof = true;
            end += static_cast<std::size_t>(std::max<std::streamsize>(got, 0));
            if (!*in) eof = true;
        }
        return avail() >= n;
    }
    void consume(std::size_t n)
    {
        begin += n;
        if (begin == end) {
            offset += begin;
            begin = end = 0;
        }
    }
    uint64_t here() const { return offset + begin; }

    void start_skip(const std::string& cause)
    {
        if (!skipping) {
            skipping = true;
            skip_from = here();
            skip_cause = cause;
        }
    }
    void end_skip()
    {
        if (!skipping) return;
        skipping = false;
        damage.push_back({skip_from, here() - skip_from, skip_cause});
    }

    void read_magic()
    {
        if (!ensure(sizeof fmt::magic) || std::memcmp(buf.data() + begin, fmt::magic, sizeof fmt::magic) != 0)
            refuse(name, "not a lapse capture (no LAPSECAP magic at the start)");
        consume(sizeof fmt::magic);
    }

    // Reads chunks until a windows chunk is ready to decode (true) or the
    // file ends (false). Other chunks are taken in on the way.
    bool load_windows_chunk()
    {
        for (;;) {
            if (!ensure(fmt::chunk_header_size)) {
                if (avail() > 0) {
                    start_skip(skipping ? skip_cause
                                        : "incomplete chunk: the file ends " + std::to_string(avail()) +
                                              " bytes into a chunk header (cut short while writing it)");
                    consume(avail());
                }
                end_skip();
                return false;
            }
            const unsigned char* p = buf.data() + begin;
            if (std::memcmp(p, fmt::sync, sizeof fmt::sync) != 0) {
                start_skip("no chunk starts here (no LCHK sync)");
                consume(1);
                skip_to_sync();
                continue;
            }
            const uint32_t size = detail::wire::load_u32le(p + 8);
            if (size > fmt::max_payload || p[5] != 0 || p[6] != 0 || p[7] != 0) {
                start_skip(size > fmt::max_payload ? "chunk size " + std::to_string(size) + " over the limit"
                                                   : "chunk header padding is not zero");
                consume(1);
                skip_to_sync();
                continue;
            }
            if (!ensure(fmt::chunk_header_size + size)) {
                start_skip("incomplete chunk: the file ends " + std::to_string(avail()) + " bytes into a chunk of " +
                           std::to_string(fmt::chunk_header_size + size) + " (cut short while writing it)");
                consume(1);
                skip_to_sync();
                continue;
            }
            p = buf.data() + begin;
            uint32_t crc = detail::wire::crc32c(0, p + 4, 8);
            crc = detail::wire::crc32c(crc, p + fmt::chunk_header_size, size);
            if (crc != detail::wire::load_u32le(p + 12)) {
                start_skip("checksum mismatch");
                consume(1);
                skip_to_sync();
                continue;
            }
            end_skip();
            const uint8_t type = p[4];
            const uint64_t at = here();
            ++chunks;
            if (type == fmt::chunk_windows) {
                chunk.assign(p + fmt::chunk_header_size, p + fmt::chunk_header_size + size);
                consume(fmt::chunk_header_size + size);
                if (begin_windows(at)) return true;
                continue;
            }
            Reader r(p + fmt::chunk_header_size, size);
            switch (type) {
            case fmt::chunk_header: read_header(r, at); break;
            case fmt::chunk_source: read_source(r, at); break;
            case fmt::chunk_drops: read_drops(r, at); break;
            case fmt::chunk_end: read_end(r, at); break;
            default: break;  // a later version's chunk: skipped whole, by its size
            }
            consume(fmt::chunk_header_size + size);
        }
    }

    // Advances to the next "LCHK" (or the end of the file).
    void skip_to_sync()
    {
        for (;;) {
            const unsigned char* p = buf.data() + begin;
            const std::size_t n = avail();
            for (std::size_t i = 0; i + sizeof fmt::sync <= n; ++i)
                if (p[i] == 'L' && std::memcmp(p + i, fmt::sync, sizeof fmt::sync) == 0) {
                    consume(i);
                    return;
                }
            // Keep the last bytes: a sync may straddle the block boundary.
            if (n >= sizeof fmt::sync) consume(n - (sizeof fmt::sync - 1));
            const std::size_t kept = avail();
            if (!ensure(kept + 1)) return;
        }
    }

    void bad_chunk(uint64_t at, const std::string& why) { damage.push_back({at, 0, why}); }

    void note_time(int64_t ns) { last_chunk_ns = std::max(last_chunk_ns, ns); }

    void read_header(Reader& r, uint64_t at)
    {
        CaptureHeader h;
        h.version = static_cast<uint32_t>(r.varint());
        h.host = std::string(r.str(fmt::max_string));
        h.pid = r.varint();
        h.anchor_monotonic_ns = r.svarint();
        h.anchor_realtime_ns = r.svarint();
        h.program = std::string(r.str(fmt::max_string));
        if (r.failed()) return bad_chunk(at, "header chunk: fields cut short");
        if (h.version > fmt::version)
            refuse(name, "capture format version " + std::to_string(h.version) + " is newer than this reader (" +
                             std::to_string(fmt::version) + ")");
        header = std::move(h);
        have_header = true;
        note_time(header.anchor_monotonic_ns);
    }

    void read_source(Reader& r, uint64_t at)
    {
        const int64_t written = r.svarint();
        CaptureSource s;
        s.id = static_cast<uint32_t>(r.varint());
        s.plugin = std::string(r.str(fmt::max_string));
        s.plugin_version = std::string(r.str(fmt::max_string));
        s.plugin_file = std::string(r.str(fmt::max_string));
        s.device_name = std::string(r.str(fmt::max_string));
        s.stack = std::string(r.str(fmt::max_string));
        s.stream_count = static_cast<uint32_t>(r.varint());
        s.capabilities = r.varint();
        const uint64_t n = r.varint();
        if (n > r.left()) r.fail();
        for (uint64_t i = 0; i < n && !r.failed(); ++i) {
            const uint64_t d = r.u8();
            s.stream_domains.push_back(valid_domain(d) ? static_cast<ClockDomain>(d) : ClockDomain::none);
        }
        if (r.failed()) return bad_chunk(at, "source chunk: fields cut short");
        note_time(written);
        if (sources.size() < max_sources) sources.push_back(std::move(s));
    }

    void read_drops(Reader& r, uint64_t at)
    {
        const int64_t written = r.svarint();
        const uint64_t n = r.varint();
        for (uint64_t i = 0; i < n && !r.failed(); ++i) {
            std::string_view nm = r.str(fmt::max_string);
            const uint64_t count = r.varint();
            if (r.failed()) break;
            auto it = drops.find(nm);
            if (it == drops.end()) {
                if (drops.size() >= max_drop_names) nm = "<other names>";
                it = drops.emplace(std::string(nm), 0).first;
            }
            it->second = std::max(it->second, count);  // counts are cumulative
        }
        if (r.failed()) return bad_chunk(at, "drops chunk: fields cut short");
        note_time(written);
    }

    void read_end(Reader& r, uint64_t at)
    {
        const int64_t written = r.svarint();
        r.varint();  // windows recorded (the writer's count)
        r.varint();  // windows dropped
        if (r.failed()) return bad_chunk(at, "end chunk: fields cut short");
        note_time(written);
        complete = true;
    }

    bool begin_windows(uint64_t at)
    {
        chunk_offset = at;
        records = Reader(chunk.data(), chunk.size());
        const int64_t written = records.svarint();
        const uint64_t n = records.varint();
        strings.clear();
        if (n > records.left()) records.fail();
        for (uint64_t i = 0; i < n && !records.failed(); ++i) strings.push_back(records.str(fmt::max_string));
        records_left = records.varint();
        if (records.failed() || records_left > records.left()) {
            bad_chunk(at, "windows chunk: string table or count cut short");
            return false;
        }
        note_time(written);
        record_index = 0;
        prev_thread = 0;
        std::fill(std::begin(prev_start), std::end(prev_start), 0);
        return true;
    }

    // Decodes the next record of the current chunk; false when it has none
    // left (or the rest is not readable, which is reported).
    bool decode(CapturedWindow& w)
    {
        if (records_left == 0) return false;
        Reader& r = records;
        const uint8_t head = r.u8();
        const uint64_t state = (head >> fmt::state_shift) & 3, method = (head >> fmt::method_shift) & 3,
                       domain = (head >> fmt::domain_shift) & 3;
        const uint64_t name_index = r.varint();
        w = CapturedWindow{};
        w.source = static_cast<uint32_t>(r.varint());
        w.stream = static_cast<Stream>(r.varint());
        prev_thread += static_cast<uint64_t>(r.svarint());
        w.thread = w.close_thread = prev_thread;
        if (head & fmt::closed_elsewhere) w.close_thread = w.thread + static_cast<uint64_t>(r.svarint());
        w.state = static_cast<DurationState>(state);
        w.method = static_cast<TimingMethod>(method);
        w.domain = static_cast<ClockDomain>(domain);
        const char* problem = nullptr;
        if (w.state == DurationState::ready) {
            int64_t& prev = prev_start[domain];
            prev = static_cast<int64_t>(static_cast<uint64_t>(prev) + static_cast<uint64_t>(r.svarint()));
            w.start_ns = prev;
            const int64_t length = r.svarint();
            if (length < 0) problem = "a negative duration";
            w.end_ns = static_cast<int64_t>(static_cast<uint64_t>(w.start_ns) + static_cast<uint64_t>(length));
        }
        if (w.state == DurationState::failed) w.failure = static_cast<lapse_status>(static_cast<int32_t>(r.svarint()));
        if (w.state == DurationState::failed || w.state == DurationState::not_measured) {
            const uint64_t cause = r.varint();
            if (cause > strings.size()) problem = "an unknown cause string";
            else if (cause > 0) w.cause = strings[cause - 1];
        }
        w.flags = r.varint();
        if (name_index >= strings.size()) problem = "an unknown name";
        else w.name = strings[name_index];
        if (head & fmt::head_reserved) problem = "a reserved bit set";
        if (w.state == DurationState::pending) problem = "a pending state";
        if (r.failed()) problem = "fields cut short";
        if (problem != nullptr) {
            bad_chunk(chunk_offset, "windows chunk: record " + std::to_string(record_index) + " has " + problem +
                                        "; the rest of the chunk (" + std::to_string(records_left) +
                                        " records) is skipped");
            records_left = 0;
            return false;
        }
        --records_left;
        ++record_index;
        return true;
    }

    void finish()
    {
        if (finished) return;
        finished = true;
        drop_list.clear();
        drop_total = 0;
        for (const auto& [n, c] : drops) {
            drop_list.push_back({n, c});
            drop_total += c;
        }
        std::stable_sort(drop_list.begin(), drop_list.end(),
                         [](const CaptureDrop& a, const CaptureDrop& b) { return a.count > b.count; });
        chunk.clear();
        chunk.shrink_to_fit();
    }
};

CaptureReader::CaptureReader(const std::filesystem::path& file)
{
    auto in = std::make_unique<std::ifstream>(file, std::ios::binary);
    if (!*in) throw Error(LAPSE_ERROR_INVALID_ARGUMENT, file.string() + ": cannot read the capture file");
    *this = CaptureReader(std::move(in), file.string());
}

CaptureReader::CaptureReader(std::unique_ptr<std::istream> in, std::string source_name) : impl_(std::make_unique<Impl>())
{
    impl_->in = std::move(in);
    impl_->name = std::move(source_name);
    impl_->read_magic();
    // Take in the header (and sources) up to the first windows chunk, which
    // stays loaded for next().
    if (!impl_->load_windows_chunk()) impl_->finish();
    if (!impl_->have_header && impl_->windows == 0 && impl_->chunks == 0 && impl_->damage.empty())
        refuse(impl_->name, "a capture with no readable chunk");
}

CaptureReader::~CaptureReader() = default;
CaptureReader::CaptureReader(CaptureReader&&) noexcept = default;
CaptureReader& CaptureReader::operator=(CaptureReader&&) noexcept = default;

const std::string& CaptureReader::source_name() const noexcept { return impl_->name; }
const CaptureHeader& CaptureReader::header() const noexcept { return impl_->header; }
const std::vector<CaptureSource>& CaptureReader::sources() const noexcept { return impl_->sources; }

bool CaptureReader::next(CapturedWindow& out)
{
    Impl& m = *impl_;
    if (m.finished) return false;
    for (;;) {
        if (m.decode(out)) {
            ++m.windows;
            return true;
        }
        if (!m.load_windows_chunk()) {
            m.finish();
            return false;
        }
    }
}

void CaptureReader::for_each(const std::function<void(const CapturedWindow&)>& visit)
{
    CapturedWindow w;
    while (next(w)) visit(w);
}

bool CaptureReader::complete() const noexcept { return impl_->complete; }
int64_t CaptureReader::last_chunk_monotonic_ns() const noexcept { return impl_->last_chunk_ns; }
const std::vector<CaptureDrop>& CaptureReader::dropped() const noexcept { return impl_->drop_list; }
uint64_t CaptureReader::dropped_total() const noexcept { return impl_->drop_total; }
const std::vector<CaptureDamage>& CaptureReader::damage() const noexcept { return impl_->damage; }
uint64_t CaptureReader::windows_read() const noexcept { return impl_->windows; }
uint64_t CaptureReader::chunks_read() const noexcept { return impl_->chunks; }

bool is_capture_file(const std::filesystem::path& file)
{
    std::ifstream in(file, std::ios::binary);
    char head[sizeof fmt::magic] = {};
    in.read(head, sizeof head);
    return in.gcount() == static_cast<std::streamsize>(sizeof head) && std::memcmp(head, fmt::magic, sizeof head) == 0;
}

}  // namespace lapse
