// A test double for RecordSource: records and input descriptions held in
// memory. It stands in for a capture reader that records what session
// archives cannot (clock anchors, dropped counts), so the consumers' use of
// those fields is tested before that reader exists.
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
    // No files behind it: formats that read files themselves (chrome) do
    // not take a memory source.
    const std::vector<std::string>& paths() const override
    {
        static const std::vector<std::string> none;
        return none;
    }
    std::optional<std::size_t> next_input() override
    {
        current_ = started_ ? current_ + 1 : 0;
        started_ = true;
        next_ = 0;
        if (current_ >= inputs_.size()) return std::nullopt;
        return current_;
    }
    const cli::InputInfo& info() const override { return inputs_[current_].info; }
    bool next_record(WindowRecord& out) override
    {
        if (next_ >= inputs_[current_].records.size()) return false;
        out = inputs_[current_].records[next_++];
        return true;
    }

private:
    std::vector<Input> inputs_;
    std::size_t current_ = 0, next_ = 0;
    bool started_ = false;
};

}  // namespace lapse::test
