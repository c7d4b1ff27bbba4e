// lapse::Capture and its collector thread (see capture_core.hpp).
#include "capture_core.hpp"

#include "../device_core.hpp"
#include "format.hpp"
#include "thread_recording.hpp"
#include "../metrics/window_metrics.hpp"

#include <lapse/core/error.hpp>

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>

namespace lapse {

CaptureSink::~CaptureSink() = default;

const char* to_string(CapturePolicy policy) noexcept
{
    switch (policy) {
    case CapturePolicy::drop: return "drop";
    case CapturePolicy::block: return "block";
    }
    return "unknown";
}

namespace detail {

namespace {

// Appends to a file with write(2): a chunk is in the kernel once written,
// so a host killed right after (SIGKILL) still leaves it in the file.
class FileSink final : public CaptureSink {
public:
    explicit FileSink(const std::filesystem::path& path) : path_(path)
    {
        fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd_ < 0)
            throw Error(LAPSE_ERROR_INVALID_ARGUMENT,
                        path.string() + ": cannot create the capture file: " + std::strerror(errno));
    }
    ~FileSink() override
    {
        if (fd_ >= 0) ::close(fd_);
    }
    void write(std::span<const std::byte> bytes) override
    {
        const std::byte* p = bytes.data();
        std::size_t left = bytes.size();
        while (left > 0) {
            const ssize_t n = ::write(fd_, p, left);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0)
                throw Error(LAPSE_ERROR_INVALID_ARGUMENT,
                            path_.string() + ": writing the capture failed: " + std::strerror(errno));
            p += n;
            left -= static_cast<std::size_t>(n);
        }
    }

private:
    std::filesystem::path path_;
    int fd_ = -1;
};

// A capture that only feeds its metrics ([metrics] with no [capture] path):
// the chunks are encoded as always and go nowhere.
class DiscardSink final : public CaptureSink {
public:
    void write(std::span<const std::byte>) override {}
};

std::shared_ptr<CaptureSink> sink_of(CaptureOptions& options)
{
    if (!options.sink)
        options.sink = options.path.empty() ? std::shared_ptr<CaptureSink>(std::make_shared<DiscardSink>())
                                            : std::make_shared<FileSink>(options.path);
    return options.sink;
}

std::vector<std::shared_ptr<CaptureObserver>> open_observers(const CaptureOptions& options, uint16_t& metrics_port)
{
    std::vector<std::shared_ptr<CaptureObserver>> observers;
    if (!options.metrics.listen.empty()) {
        auto metrics = std::make_shared<WindowMetrics>(options.metrics, "metrics");
        metrics_port = metrics->port();
        observers.push_back(std::move(metrics));
    }
    return observers;
}

std::size_t ring_capacity(uint64_t budget)
{
    // One slot per note the budget can hold, as a power of two; past 64 Ki
    // a full ring reads as a full budget (the collector pulls far sooner).
    const uint64_t notes = std::max<uint64_t>(budget / sizeof(WindowNote), 64);
    std::size_t cap = 64;
    while (cap < notes && cap < (std::size_t{1} << 16)) cap <<= 1;
    return cap;
}

std::atomic<uint64_t> next_capture_id{1};

std::string host_name()
{
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0) return "";
    return buf;
}

std::string program_name()
{
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    std::string argv0;
    std::getline(in, argv0, '\0');
    return argv0;
}

// The anchor: the realtime clock read between two monotonic reads, the
// closest pair of three tries, paired with the monotonic midpoint.
void read_anchor(CaptureHeader& h)
{
    int64_t best_gap = INT64_MAX;
    for (int i = 0; i < 3; ++i) {
        const int64_t a = monotonic_now_ns();
        const int64_t r = realtime_now_ns();
        const int64_t b = monotonic_now_ns();
        if (b - a < best_gap) {
            best_gap = b - a;
            h.anchor_monotonic_ns = a + (b - a) / 2;
            h.anchor_realtime_ns = r;
        }
    }
}

CapturedWindow window_of(const WindowNote& n)
{
    CapturedWindow w;
    w.name = name_of(n);
    w.source = n.source;
    w.stream = n.stream;
    w.thread = n.thread;
    w.close_thread = n.close_thread;
    w.state = n.state;
    w.method = n.method;
    w.domain = n.domain;
    if (n.state == DurationState::ready) {
        w.start_ns = n.start_ns;
        w.end_ns = n.end_ns;
        w.flags = n.flags;
    }
    w.failure = n.failure;
    if (n.state == DurationState::failed || n.state == DurationState::not_measured) w.cause = message_of(n);
    return w;
}

}  // namespace

int64_t realtime_now_ns() noexcept
{
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

CaptureCore::CaptureCore(CaptureOptions options)
    : options_(std::move(options)),
      observers_(open_observers(options_, metrics_port_)),
      writer_(*sink_of(options_)),
      id_(next_capture_id.fetch_add(1, std::memory_order_relaxed)), ring_size_(ring_capacity(options_.budget_bytes)),
      // A sixteenth each: a few threads share the budget, and one thread
      // touches the shared counter once per ~budget/16 bytes of windows.
      slice_(std::max<uint64_t>(options_.budget_bytes / 16, sizeof(WindowNote)))
{
    if (options_.flush_interval.count() <= 0) options_.flush_interval = std::chrono::milliseconds(100);
    CaptureHeader header;
    header.version = capture_format::version;
    header.host = host_name();
    header.program = program_name();
    header.pid = static_cast<uint64_t>(::getpid());
    read_anchor(header);
    writer_.write_magic();
    writer_.write_header(header);
    bytes_written_ = writer_.bytes_written();
    chunks_ = writer_.chunks();
    last_write_ns_ = monotonic_now_ns();
    collector_ = std::thread([this] { run(); });
    // Named, like the CPU plugin's workers, so that top -H, perf and a
    // debugger say whose thread it is.
    pthread_setname_np(collector_.native_handle(), "lapse-capture");
}

CaptureCore::~CaptureCore() { close(); }

uint32_t CaptureCore::add_source(CaptureSource source)
{
    std::lock_guard lock(mutex_);
    source.id = next_source_++;
    const uint32_t id = source.id;
    new_sources_.push_back(std::move(source));
    has_requests_.store(true, std::memory_order_release);
    wake_.notify_one();
    return id;
}

void CaptureCore::count_drop(const WindowNote& note) noexcept
{
    dropped_.fetch_add(1, std::memory_order_relaxed);
    try {
        std::lock_guard lock(drops_mutex_);
        const std::string_view name = name_of(note);
        auto it = drops_.find(name);
        if (it == drops_.end()) it = drops_.emplace(std::string(name), 0).first;
        ++it->second;
        drops_changed_ = true;
    } catch (...) {
        // Out of memory for the name: the total above still counts it.
    }
}

void CaptureCore::submit(Request& request) noexcept
{
    std::unique_lock lock(mutex_);
    if (!collector_.joinable()) return;
    requests_.push_back(&request);
    has_requests_.store(true, std::memory_order_release);
    wake_.notify_one();
    done_.wait(lock, [&] { return request.done; });
}

void CaptureCore::drain_device(DeviceCore* device) noexcept
{
    Request r{Request::drain_device, device, std::chrono::seconds(10)};
    submit(r);
}

void CaptureCore::drain_all(std::chrono::nanoseconds wait) noexcept
{
    Request r{Request::drain_all, nullptr, wait};
    submit(r);
}

void CaptureCore::close() noexcept
{
    if (refusing_.fetch_or(refuse_closed) & refuse_closed) return;  // closed already (close is called once per capture in practice)
    Request r{Request::close, nullptr, std::chrono::seconds(10)};
    submit(r);
    if (collector_.joinable()) collector_.join();
}

CaptureStats CaptureCore::stats() const noexcept
{
    CaptureStats s;
    s.recorded = recorded_.load(std::memory_order_relaxed);
    s.dropped = dropped_.load(std::memory_order_relaxed);
    uint64_t admitted = 0, held = 0;
    {
        std::lock_guard lock(channels_mutex_);
        admitted = retired_pushed_;
        for (const auto& ch : channels_) {
            admitted += ch->notes.pushed();
            const uint64_t charged = ch->charged.load(std::memory_order_relaxed);
            const uint64_t freed = ch->freed.load(std::memory_order_relaxed);
            held += charged > freed ? charged - freed : 0;
        }
    }
    const uint64_t settled = s.recorded + unwritten_.load(std::memory_order_relaxed);
    s.queued = admitted > settled ? admitted - settled : 0;
    s.bytes_written = bytes_written_.load(std::memory_order_relaxed);
    s.chunks = chunks_.load(std::memory_order_relaxed);
    s.held_bytes = held;
    s.peak_held_bytes = peak_.load(std::memory_order_relaxed);
    s.budget_bytes = options_.budget_bytes;
    return s;
}

void CaptureCore::refresh_channels() noexcept
{
    if (channels_version_.load(std::memory_order_acquire) == active_version_) return;
    std::lock_guard lock(channels_mutex_);
    try {
        active_ = channels_;
        active_version_ = channels_version_.load(std::memory_order_relaxed);
    } catch (...) {
        // Out of memory: the old list still drains; try again next round.
    }
}

std::size_t CaptureCore::pull() noexcept
{
    round_ns_ = monotonic_now_ns();
    refresh_channels();
    std::size_t pulled = 0;
    try {
        for (const auto& ch : active_) {
            while (WindowNote* n = ch->notes.pop()) {
                try {
                    pending_.push_back(n);
                } catch (...) {
                    // pending_ cannot grow: this one is written at once
                    // (final) or given up, never lost.
                    if (n->claim.load(std::memory_order_acquire) != note_final)
                        n->device->give_up_note(n, "the capture ran out of memory");
                    encode(n);
                }
                ++pulled;
            }
        }
    } catch (...) {
    }
    return pulled;
}

void CaptureCore::encode(WindowNote* note) noexcept
{
    bool written = false;
    if (!broken()) {
        try {
            const CapturedWindow window = window_of(*note);
            writer_.add(window, note->interned, round_ns_);
            recorded_.fetch_add(1, std::memory_order_relaxed);
            written = true;
            for (const auto& observer : observers_) observer->window(window);
        } catch (...) {
            mark_broken();
        }
    }
    if (!written) {
        // Written nowhere (the sink failed): counted as dropped, never silent.
        count_drop(*note);
        unwritten_.fetch_add(1, std::memory_order_relaxed);
    }
    // Given back to the channel's budget once per round (release_held),
    // not per window: the closing thread then reloads it once per batch.
    note->channel->freed_unpublished += note->cost;
    let_go(note);
}

void CaptureCore::let_go(WindowNote* note) noexcept
{
    NoteChannel* ch = note->channel;
    // The caller's Duration may still hold it: whoever lets go last frees
    // it. The collector hands its notes back to the closing thread for
    // reuse rather than to its own thread's list.
    if (note->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (ch != nullptr && !ch->orphaned.load(std::memory_order_acquire)) {
        reset_for_reuse(*note);
        if (ch->returns.push(note)) return;
    }
    delete note;
}

void CaptureCore::release_held() noexcept
{
    for (const auto& ch : active_) {
        if (ch->freed_unpublished == 0) continue;
        ch->freed.store(ch->freed.load(std::memory_order_relaxed) + ch->freed_unpublished, std::memory_order_release);
        ch->freed_unpublished = 0;
    }
    retire_channels();
}

void CaptureCore::retire_channels() noexcept
{
    bool any = false;
    for (const auto& ch : active_)
        any = any || (ch->orphaned.load(std::memory_order_acquire) && ch->notes.empty() && ch->held() == 0);
    if (!any) return;
    std::lock_guard lock(channels_mutex_);
    auto gone = [&](const std::shared_ptr<NoteChannel>& ch) {
        if (!(ch->orphaned.load(std::memory_order_acquire) && ch->notes.empty() && ch->held() == 0)) return false;
        retired_pushed_ += ch->notes.pushed();
        granted_.fetch_sub(ch->grant.load(std::memory_order_relaxed), std::memory_order_relaxed);
        return true;
    };
    channels_.erase(std::remove_if(channels_.begin(), channels_.end(), gone), channels_.end());
    channels_version_.fetch_add(1, std::memory_order_release);
    active_version_ = ~uint64_t{0};  // refresh now: the retired ones leave active_ too
    try {
        active_ = channels_;
        active_version_ = channels_version_.load(std::memory_order_relaxed);
    } catch (...) {
    }
}

bool CaptureCore::process(std::chrono::nanoseconds timeout, DeviceCore* only, std::size_t count) noexcept
{
    const std::size_t limit = std::min(count, pending_.size());
    if (limit == 0) return false;
    bool any = false;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < limit; ++i) {
        WindowNote* n = pending_[i];
        if (i + 8 < limit) __builtin_prefetch(pending_[i + 8]);
        if (n->claim.load(std::memory_order_acquire) == note_final) {
            encode(n);
            any = true;
        } else {
            pending_[kept++] = n;
        }
    }
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(kept),
                   pending_.begin() + static_cast<std::ptrdiff_t>(limit));
    const auto tried = pending_.begin() + static_cast<std::ptrdiff_t>(kept);
    // Grouped by device, one resolve call each; usually there is one device.
    if (std::adjacent_find(pending_.begin(), tried, [](const WindowNote* a, const WindowNote* b) {
            return a->device != b->device;
        }) != tried)
        std::stable_sort(pending_.begin(), tried,
                         [](const WindowNote* a, const WindowNote* b) { return std::less<>()(a->device, b->device); });
    std::size_t i = 0;
    while (i < kept) {
        DeviceCore* device = pending_[i]->device;
        std::size_t j = i;
        while (j < kept && pending_[j]->device == device) ++j;
        if (only == nullptr || device == only) {
            std::size_t done = 0;
            try {
                done = device->resolve_notes(pending_.data() + i, j - i, timeout);
            } catch (...) {
                done = 0;  // resolve could not allocate: try again next round
            }
            for (std::size_t k = i; k < i + done; ++k) {
                encode(pending_[k]);
                pending_[k] = nullptr;
            }
            any = any || done > 0;
        }
        i = j;
    }
    pending_.erase(std::remove(pending_.begin(), pending_.end(), nullptr), pending_.end());
    return any;
}

void CaptureCore::settle(DeviceCore* only, std::chrono::nanoseconds wait, bool give_up) noexcept
{
    const auto deadline = std::chrono::steady_clock::now() + wait;
    auto left = [&] {
        std::size_t n = 0;
        for (WindowNote* p : pending_) n += only == nullptr || p->device == only;
        return n;
    };
    for (;;) {
        pull();
        const auto now = std::chrono::steady_clock::now();
        const auto slice = std::min<std::chrono::nanoseconds>(
            std::max<std::chrono::nanoseconds>(deadline - now, std::chrono::nanoseconds(0)), std::chrono::milliseconds(50));
        process(slice, only);
        release_held();
        if (left() == 0 || std::chrono::steady_clock::now() >= deadline) break;
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // a caller may hold a claim
    }
    if (!give_up) return;
    for (WindowNote*& p : pending_) {
        if (only != nullptr && p->device != only) continue;
        // A caller still resolving it (busy) finishes first: close comes after every other call.
        while (p->claim.load(std::memory_order_acquire) == note_busy) std::this_thread::yield();
        if (p->claim.load(std::memory_order_acquire) != note_final)
            p->device->give_up_note(p, only != nullptr ? "still pending when the device closed"
                                                       : "still pending when the capture closed");
        encode(p);
        p = nullptr;
    }
    pending_.erase(std::remove(pending_.begin(), pending_.end(), nullptr), pending_.end());
    release_held();
}

void CaptureCore::write_chunks(bool force) noexcept
{
    const int64_t now = monotonic_now_ns();
    if (!force && now - last_write_ns_ < std::chrono::nanoseconds(options_.flush_interval).count()) return;
    try {
        std::vector<std::pair<std::string, uint64_t>> counts;
        {
            std::lock_guard lock(drops_mutex_);
            if (drops_changed_) counts.assign(drops_.begin(), drops_.end());
            drops_changed_ = false;
        }
        if (!counts.empty())
            for (const auto& observer : observers_) observer->drops(counts);
        for (const auto& observer : observers_) observer->flush();
        if (!broken()) {
            writer_.write_windows(now);
            if (!counts.empty()) writer_.write_drops(counts, now);
        }
    } catch (...) {
        mark_broken();
    }
    last_write_ns_ = now;
    bytes_written_.store(writer_.bytes_written(), std::memory_order_relaxed);
    chunks_.store(writer_.chunks(), std::memory_order_relaxed);
}

void CaptureCore::handle(Request& r) noexcept
{
    switch (r.kind) {
    case Request::drain_device: settle(r.device, r.wait, true); break;
    case Request::drain_all: settle(nullptr, r.wait, false); break;
    case Request::close: {
        settle(nullptr, r.wait, true);
        write_chunks(true);
        try {
            if (!broken())
                writer_.write_end(recorded_.load(), dropped_.load(), monotonic_now_ns());
        } catch (...) {
            mark_broken();
        }
        break;
    }
    }
    write_chunks(true);
}

void CaptureCore::run() noexcept
{
    bool stop = false;
    while (!stop) {
        std::deque<Request*> requests;
        std::vector<CaptureSource> sources;
        if (has_requests_.load(std::memory_order_acquire)) {
            std::lock_guard lock(mutex_);
            requests.swap(requests_);
            sources.swap(new_sources_);
            has_requests_.store(false, std::memory_order_relaxed);
        }
        for (const CaptureSource& s : sources) {
            for (const auto& observer : observers_) observer->source(s);
            try {
                if (!broken()) writer_.write_source(s, monotonic_now_ns());
            } catch (...) {
                mark_broken();
            }
        }
        // The notes pulled this round wait for the next one: a window the
        // caller just closed is most often not stamped yet, and trying it
        // now would cost a resolve that only answers PENDING.
        const std::size_t aged = pending_.size();
        const std::size_t pulled = pull();
        const bool worked = process(std::chrono::nanoseconds(0), nullptr, aged) || pulled > 0;
        release_held();
        write_chunks(false);
        for (Request* r : requests) {
            handle(*r);
            if (r->kind == Request::close) stop = true;
            std::lock_guard lock(mutex_);
            r->done = true;
            done_.notify_all();
        }
        if (stop || pulled >= kBusyRound) continue;
        // A round with little to do naps, so that windows gather into the
        // next one (a collector that takes each note as it arrives costs the
        // callers' cores more than its work: the rings' cache lines move
        // per note). Idle: sleep longer, shorter while windows wait on the
        // device. A request (drain, close) wakes it at once.
        std::unique_lock lock(mutex_);
        const auto nap = worked ? kGatherNap : pending_.empty() ? std::chrono::microseconds(2000)
                                                                : std::chrono::microseconds(250);
        wake_.wait_for(lock, nap, [&] { return has_requests_.load(std::memory_order_relaxed); });
    }
    // Anything still asked of a stopped collector is answered.
    std::lock_guard lock(mutex_);
    for (Request* r : requests_) r->done = true;
    requests_.clear();
    done_.notify_all();
}

}  // namespace detail

Capture::Capture(std::unique_ptr<detail::CaptureCore> core) noexcept : core_(std::move(core)) {}
Capture::~Capture() = default;

std::shared_ptr<Capture> Capture::open(CaptureOptions options)
{
    if (!options.sink && options.path.empty() && options.metrics.listen.empty())
        throw Error(LAPSE_ERROR_INVALID_ARGUMENT, "Capture::open: neither a path, a sink nor a metrics address");
    if (options.budget_bytes < 64 * 1024)
        throw Error(LAPSE_ERROR_INVALID_ARGUMENT, "Capture::open: budget_bytes " +
                                                      std::to_string(options.budget_bytes) + " is under 64 KiB");
    return std::shared_ptr<Capture>(new Capture(std::make_unique<detail::CaptureCore>(std::move(options))));
}

void Capture::close() noexcept { core_->close(); }
void Capture::flush() { core_->drain_all(std::chrono::nanoseconds(0)); }
CaptureStats Capture::stats() const noexcept { return core_->stats(); }
const std::filesystem::path& Capture::path() const noexcept { return core_->options().path; }
const CaptureOptions& Capture::options() const noexcept { return core_->options(); }
uint16_t Capture::metrics_port() const noexcept { return core_->metrics_port(); }

}  // namespace lapse
