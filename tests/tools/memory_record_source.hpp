// A TEST DOUBLE for RecordSource: records and input descriptions held in
// memory. It stands in for an input format that records what session
// archives cannot (device clock anchors, dropped counts), so the
// consumers' use of those fields is tested without such a file.
#pragma once

#include "record_source.hpp"

#include <vector>

namespace lapse::test {

class MemoryRecordSource final : public cli::RecordSource {
public:
    struct Input {
        cli::InputInfo info;
        std::vector<WindowRecord> records;
    };
    explicit MemoryRecordSource(std::vector<Input> inputs) : inputs_(std::move(inputs)) {}

    std::size_t input_count() const override { return inputs_.size(); }
    std::optional<std::size_t> next_input() override
    {
        current_ = started_ ? current_ + 1 : 0;
        started_ = true;
        next_ = 0;
        if (current_ >= inputs_.size()) return std::nullopt;
        return current_;
    }
    const cli::InputInfo& info() const override { return inputs_[current_].info; }
    bool next_record(cli::RecordedWindow& out) override
    {
        if (next_ >= inputs_[current_].records.size()) return false;
        out = cli::recorded(inputs_[current_].records[next_++], static_cast<uint32_t>(current_));
        return true;
    }
    void rewind() override
    {
        started_ = false;
        current_ = next_ = 0;
    }

private:
    std::vector<Input> inputs_;
    std::size_t current_ = 0, next_ = 0;
    bool started_ = false;
};

}  // namespace lapse::test
