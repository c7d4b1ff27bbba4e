// RecordSource over captures (lapse::CaptureReader: one chunk in memory at
// a time) and session archives (Session::load reads a whole archive, so
// memory is one archive's records at a time), or one session in memory.
#include "record_source.hpp"

#include <algorithm>

namespace lapse::cli {

RecordedWindow recorded(const WindowRecord& w, uint32_t input)
{
    RecordedWindow out;
    out.name = w.name;
    out.input = input;
    out.stream = w.stream;
    out.thread = w.thread;
    out.close_thread = w.close_thread != 0 ? w.close_thread : w.thread;
    out.state = w.state;
    out.method = w.method;
    out.domain = w.domain;
    out.start_ns = w.start_ns;
    out.end_ns = w.end_ns;
    out.failure = w.failure;
    out.flags = w.flags;
    return out;
}

namespace {

class FileRecordSource final : public RecordSource {
public:
    explicit FileRecordSource(std::vector<std::string> paths) : paths_(std::move(paths)) {}
    explicit FileRecordSource(const Session& session) : paths_{"<session>"}, in_memory_(&session) {}

    std::size_t input_count() const override { return paths_.size(); }

    std::optional<std::size_t> next_input() override
    {
        const std::size_t index = started_ ? current_ + 1 : 0;
        started_ = true;
        current_ = index;
        records_.clear();
        next_ = 0;
        capture_.reset();
        if (index >= paths_.size()) return std::nullopt;
        info_ = InputInfo{};
        info_.path = paths_[index];
        if (in_memory_ != nullptr) {
            info_.backend = in_memory_->backend();
            records_ = in_memory_->windows();
            return index;
        }
        try {
            if (is_capture_file(paths_[index])) {
                capture_.emplace(paths_[index]);  // the header (and first sources) now
                const CaptureHeader& h = capture_->header();
                info_.capture = true;
                info_.header = h;
                info_.realtime_minus_monotonic_ns = h.anchor_realtime_ns - h.anchor_monotonic_ns;
                info_.counts_recorded = true;
                info_.records_work_left_queued = true;
                take_sources();
                return index;
            }
            Session session = Session::load(paths_[index]);
            info_.backend = session.backend();
            records_ = session.windows();
        } catch (const std::exception& e) {
            throw InputError(e.what());
        }
        return index;
    }

    const InputInfo& info() const override { return info_; }

    bool next_record(RecordedWindow& out) override
    {
        if (capture_) return next_captured(out);
        if (next_ >= records_.size()) return false;
        out = recorded(records_[next_++], static_cast<uint32_t>(current_));
        ++info_.windows;
        return true;
    }

    void rewind() override
    {
        started_ = false;
        current_ = 0;
        capture_.reset();
        records_.clear();
        next_ = 0;
    }

    // Captures by their anchor, earliest first; session archives (no
    // anchor) last, each group in the given order.
    void order_by_anchor()
    {
        struct Keyed {
            bool capture;
            int64_t anchor;
            std::string path;
        };
        std::vector<Keyed> keyed;
        for (std::string& path : paths_) {
            try {
                const bool capture = is_capture_file(path);
                const int64_t anchor = capture ? CaptureReader(path).header().anchor_realtime_ns : 0;
                keyed.push_back({capture, anchor, std::move(path)});
            } catch (const std::exception& e) {
                throw InputError(e.what());
            }
        }
        std::stable_sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
            if (a.capture != b.capture) return a.capture;
            return a.capture && a.anchor < b.anchor;
        });
        for (std::size_t i = 0; i < keyed.size(); ++i) paths_[i] = std::move(keyed[i].path);
    }

private:
    // A capture declares its devices before their windows: the backend is
    // its first device's, once one is known.
    void take_sources()
    {
        info_.sources = capture_->sources();
        if (info_.backend.plugin.empty() && !info_.sources.empty()) {
            const CaptureSource& s = info_.sources.front();
            info_.backend = BackendRecord{s.plugin, s.plugin_version, s.device_name, s.stream_count, s.capabilities};
        }
    }

    bool next_captured(RecordedWindow& out)
    {
        if (!capture_->next(out)) {  // a RecordedWindow is the capture's window and its input
            // The tail is known now.
            take_sources();
            info_.dropped = capture_->dropped_total();
            info_.dropped_by_name = capture_->dropped();
            info_.cut_short = !capture_->complete();
            info_.last_chunk_realtime_ns = info_.header.to_realtime(capture_->last_chunk_monotonic_ns());
            info_.damage = capture_->damage();
            return false;
        }
        if (info_.backend.plugin.empty()) take_sources();
        out.input = static_cast<uint32_t>(current_);
        ++info_.windows;
        if ((out.flags & LAPSE_DURATION_WORK_QUEUED) != 0) ++info_.unflushed;
        return true;
    }

    std::vector<std::string> paths_;
    const Session* in_memory_ = nullptr;
    std::optional<CaptureReader> capture_;
    bool started_ = false;
    std::size_t current_ = 0;
    InputInfo info_;
    std::vector<WindowRecord> records_;
    std::size_t next_ = 0;
};

}  // namespace

std::unique_ptr<RecordSource> open_record_source(std::vector<std::string> paths, InputOrder order)
{
    auto source = std::make_unique<FileRecordSource>(std::move(paths));
    if (order == InputOrder::by_anchor) source->order_by_anchor();
    return source;
}

std::unique_ptr<RecordSource> open_record_source(const Session& session)
{
    return std::make_unique<FileRecordSource>(session);
}

}  // namespace lapse::cli
