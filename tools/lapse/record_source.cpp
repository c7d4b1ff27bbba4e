// RecordSource over captures (lapse::CaptureReader: one chunk in memory at
// a time) and session archives (Session::load reads a whole archive, so
// memory is one archive's records at a time).
#include "record_source.hpp"

#include <lapse/core/capture.hpp>
#include <lapse/window.h>

namespace lapse::cli {
namespace {

// Bit 31 of WindowRecord::flags, never a lapse_duration flag: the record
// came from an input that records the "work left queued" flag at all.
constexpr uint32_t flags_recorded = 1u << 31;

class FileRecordSource final : public RecordSource {
public:
    explicit FileRecordSource(std::vector<std::string> paths) : paths_(std::move(paths)) {}

    std::size_t input_count() const override { return paths_.size(); }
    const std::vector<std::string>& paths() const override { return paths_; }

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
        try {
            if (is_capture_file(paths_[index])) {
                capture_.emplace(paths_[index]);
                const CaptureHeader& h = capture_->header();
                info_.realtime_minus_monotonic_ns = h.anchor_realtime_ns - h.anchor_monotonic_ns;
                info_.counts_recorded = true;
                info_.records_work_left_queued = true;
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

    bool next_record(WindowRecord& out) override
    {
        if (capture_) return next_captured(out);
        if (next_ >= records_.size()) return false;
        out = std::move(records_[next_++]);
        return true;
    }

private:
    bool next_captured(WindowRecord& out)
    {
        CapturedWindow w;
        if (!capture_->next(w)) {
            // The tail is known now.
            info_.dropped = capture_->dropped_total();
            info_.cut_short = !capture_->complete();
            return false;
        }
        if (info_.backend.plugin.empty() && !capture_->sources().empty()) {
            const CaptureSource& s = capture_->sources().front();
            info_.backend = BackendRecord{s.plugin, s.plugin_version, s.device_name, s.stream_count, s.capabilities};
        }
        out.name.assign(w.name);
        out.thread = w.thread;
        out.close_thread = w.close_thread;
        out.stream = w.stream;
        out.method = w.method;
        out.state = w.state;
        out.start_ns = w.start_ns;
        out.end_ns = w.end_ns;
        out.domain = w.domain;
        out.failure = w.failure;
        out.flags = static_cast<uint32_t>(w.flags) | flags_recorded;
        out.queued_ops = 0;
        if ((w.flags & LAPSE_DURATION_WORK_QUEUED) != 0) ++info_.unflushed;
        return true;
    }

    std::vector<std::string> paths_;
    std::optional<CaptureReader> capture_;
    bool started_ = false;
    std::size_t current_ = 0;
    InputInfo info_;
    std::vector<WindowRecord> records_;
    std::size_t next_ = 0;
};

}  // namespace

std::unique_ptr<RecordSource> open_record_source(std::vector<std::string> paths)
{
    return std::make_unique<FileRecordSource>(std::move(paths));
}

std::optional<bool> work_left_queued(const WindowRecord& window)
{
    if ((window.flags & flags_recorded) == 0) return std::nullopt;
    return (window.flags & LAPSE_DURATION_WORK_QUEUED) != 0;
}

}  // namespace lapse::cli
