// RecordSource over session archives. Session::load reads a whole archive,
// so memory is one input's records at a time (not all inputs at once); a
// streaming capture reader will replace this for large inputs.
#include "record_source.hpp"

namespace lapse::cli {
namespace {

class SessionRecordSource final : public RecordSource {
public:
    explicit SessionRecordSource(std::vector<std::string> paths) : paths_(std::move(paths)) {}

    std::size_t input_count() const override { return paths_.size(); }

    std::optional<std::size_t> next_input() override
    {
        const std::size_t index = started_ ? current_ + 1 : 0;
        started_ = true;
        current_ = index;
        records_.clear();
        next_ = 0;
        if (index >= paths_.size()) return std::nullopt;
        Session session;
        try {
            session = Session::load(paths_[index]);
        } catch (const std::exception& e) {
            throw InputError(e.what());
        }
        info_ = InputInfo{};
        info_.path = paths_[index];
        info_.backend = session.backend();
        records_ = session.windows();
        return index;
    }

    const InputInfo& info() const override { return info_; }

    bool next_record(WindowRecord& out) override
    {
        if (next_ >= records_.size()) return false;
        out = std::move(records_[next_++]);
        return true;
    }

private:
    std::vector<std::string> paths_;
    bool started_ = false;
    std::size_t current_ = 0;
    InputInfo info_;
    std::vector<WindowRecord> records_;
    std::size_t next_ = 0;
};

}  // namespace

std::unique_ptr<RecordSource> open_record_source(std::vector<std::string> paths)
{
    return std::make_unique<SessionRecordSource>(std::move(paths));
}

std::optional<bool> work_left_queued(const WindowRecord& window)
{
    // Session archives do not record it. A capture reader that does answers
    // from its record here.
    (void)window;
    return std::nullopt;
}

}  // namespace lapse::cli
