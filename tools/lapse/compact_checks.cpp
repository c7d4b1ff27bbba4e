// `lapse validate`: lapse.resolve_compact/1 (lapse/resolve_compact.h),
// when a device offers it. A host believes its states without looking
// further, so the check holds the extension to its rule: a measured window
// comes back READY with its stamps and is released; anything else is left
// untouched, with the pair that reads as no duration, for resolve.
#include "checks.hpp"
#include "device_under_test.hpp"

#include <lapse/resolve_compact.h>
#include <lapse/sdk/error.hpp>
#include <lapse/sdk/resolve_compact.hpp>

#include <cstring>
#include <string>
#include <vector>

namespace lapse::cli {

namespace {

using namespace device_checks;

void check_resolve_compact(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    if (dut.p->get_extension == nullptr) {
        note = "get_extension is null: the host resolves in full";
        return;
    }
    const auto* c =
        static_cast<const lapse_resolve_compact*>(dut.p->get_extension(dut.h, LAPSE_RESOLVE_COMPACT_EXTENSION));
    if (c == nullptr) {
        note = "not offered: the host resolves in full";
        return;
    }
    constexpr std::size_t size_read = LAPSE_SDK_SIZE_THROUGH(lapse_resolve_compact, resolve_compact);
    require(c->struct_size >= size_read, "lapse_resolve_compact.struct_size is " + std::to_string(c->struct_size) +
                                             ", less than the " + std::to_string(size_read) + " bytes a host reads");
    require(c->resolve_compact != nullptr, "lapse_resolve_compact.resolve_compact is null");
    require(c->method == LAPSE_TIMING_DEVICE || c->method == LAPSE_TIMING_SYSTEM,
            "lapse_resolve_compact.method is " + std::to_string(c->method) + ", not a timing method");
    require(c->clock_domain == LAPSE_CLOCK_HOST_MONOTONIC || c->clock_domain == LAPSE_CLOCK_DEVICE,
            "lapse_resolve_compact.clock_domain is " + std::to_string(c->clock_domain) + ", not a clock");
    if (dut.has(LAPSE_CAP_HOST_TIMELINE))
        require(c->clock_domain == LAPSE_CLOCK_HOST_MONOTONIC,
                "the device declares host-timeline but its compact pairs are on the device clock");

    for (lapse_stream s = 0; s < dut.info.stream_count; ++s) {
        const std::string where = "stream " + std::to_string(s) + ": ";
        const lapse_token measured = dut.open(s);
        dut.end(measured);
        const lapse_token abandoned = dut.open(s);
        dut.end(abandoned);
        dut.p->profile_abandon(dut.h, abandoned);
        const lapse_token still_open = dut.open(s);
        const lapse_token never{0, s, 0};
        dut.sync(s);

        const std::vector<lapse_token> tokens{measured, abandoned, still_open, never};
        std::vector<lapse_stamp_pair> stamps(tokens.size(), lapse_stamp_pair{-7, -7});
        std::vector<uint8_t> states(tokens.size(), 0xEE);
        lapse_error err = Dut::error();
        const lapse_status st = c->resolve_compact(dut.h, tokens.data(), stamps.data(), states.data(),
                                                   static_cast<uint32_t>(tokens.size()), LAPSE_WAIT_FOREVER, &err);
        require(st == LAPSE_NOT_READY, where + "resolve_compact over a measured, an abandoned, an open and a null "
                                               "token = " + status_text(st) + " (" + err.message +
                                           "), not LAPSE_NOT_READY");
        require(states[0] == LAPSE_COMPACT_READY || states[0] == LAPSE_COMPACT_RESOLVE_FULL,
                where + "a closed, synced window read state " + std::to_string(states[0]) + " after waiting forever");
        if (states[0] == LAPSE_COMPACT_READY) {
            require(stamps[0].end_ns >= stamps[0].start_ns, where + "a READY pair ends before it starts");
            lapse_duration again{};
            again.struct_size = sizeof again;
            err = Dut::error();
            const lapse_status full = dut.p->resolve(dut.h, &measured, &again, 1, 0, &err);
            require(full == LAPSE_ERROR_INVALID_TOKEN,
                    where + "a window answered READY was not released: resolve then said " + status_text(full));
        } else {
            dut.resolve(measured);  // the device chose the full answer: it must still be there
        }
        for (std::size_t i = 1; i < tokens.size(); ++i) {
            const std::string what = where + (i == 1 ? "an abandoned token" : i == 2 ? "a window still open" : "token id 0");
            require(states[i] == LAPSE_COMPACT_RESOLVE_FULL,
                    what + " read state " + std::to_string(states[i]) + ", not LAPSE_COMPACT_RESOLVE_FULL");
            require(stamps[i].end_ns == LAPSE_COMPACT_NO_STAMP,
                    what + ": its pair does not carry LAPSE_COMPACT_NO_STAMP, so it could read as a duration");
        }
        // Untouched: the open window still closes and resolves.
        dut.end(still_open);
        dut.resolve(still_open);
    }
    note = "offered; measured windows come back as pairs, the rest untouched";
}

// The strided form over a host's records, each pair in its own token's
// bytes: a READY pair replaces its token, and every other record (token
// and the host's word beside it) is left exactly as it was.
void check_resolve_compact_strided(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    const auto* c = dut.p->get_extension == nullptr ? nullptr
                                                    : static_cast<const lapse_resolve_compact*>(dut.p->get_extension(
                                                          dut.h, LAPSE_RESOLVE_COMPACT_EXTENSION));
    const lapse_resolve_compact_strided_fn strided = c == nullptr ? nullptr : sdk::resolve_compact_strided_of(*c);
    if (strided == nullptr) {
        note = "not offered: a host gathers tokens for resolve_compact (or resolves in full)";
        return;
    }
    struct Record {
        lapse_token token;
        uint64_t host_word;
    };
    constexpr uint64_t kHostWord = 0x5A5A5A5A5A5A5A5Au;
    for (lapse_stream s = 0; s < dut.info.stream_count; ++s) {
        const std::string where = "stream " + std::to_string(s) + ": ";
        std::vector<Record> records(4, Record{{}, kHostWord});
        records[0].token = dut.open(s);
        dut.end(records[0].token);
        records[1].token = dut.open(s);
        dut.end(records[1].token);
        dut.p->profile_abandon(dut.h, records[1].token);
        records[2].token = dut.open(s);
        records[3].token = lapse_token{0, s, 0};
        dut.sync(s);
        const std::vector<Record> given = records;

        std::vector<uint8_t> states(records.size(), 0xEE);
        lapse_error err = Dut::error();
        const lapse_status st =
            strided(dut.h, &records[0].token, sizeof(Record), reinterpret_cast<lapse_stamp_pair*>(&records[0].token),
                    sizeof(Record), states.data(), static_cast<uint32_t>(records.size()), LAPSE_WAIT_FOREVER, &err);
        require(st == LAPSE_NOT_READY, where + "resolve_compact_strided over a measured, an abandoned, an open and "
                                               "a null token = " + status_text(st) + " (" + err.message +
                                           "), not LAPSE_NOT_READY");
        for (std::size_t i = 0; i < records.size(); ++i)
            require(records[i].host_word == kHostWord,
                    where + "record " + std::to_string(i) + ": the word after its pair was written");
        if (states[0] == LAPSE_COMPACT_READY) {
            lapse_stamp_pair pair;
            std::memcpy(&pair, &records[0].token, sizeof pair);
            require(pair.end_ns >= pair.start_ns, where + "a READY pair ends before it starts");
        } else {
            require(states[0] == LAPSE_COMPACT_RESOLVE_FULL,
                    where + "a closed, synced window read state " + std::to_string(states[0]) + " after waiting forever");
            dut.resolve(given[0].token);  // the device chose the full answer: it must still be there
        }
        for (std::size_t i = 1; i < records.size(); ++i) {
            const std::string what = where + (i == 1 ? "an abandoned token" : i == 2 ? "a window still open" : "token id 0");
            require(states[i] == LAPSE_COMPACT_RESOLVE_FULL,
                    what + " read state " + std::to_string(states[i]) + ", not LAPSE_COMPACT_RESOLVE_FULL");
            require(std::memcmp(&records[i].token, &given[i].token, sizeof(lapse_token)) == 0,
                    what + ": its record was written, so the token the full resolve needs is gone");
        }
        dut.end(given[2].token);
        dut.resolve(given[2].token);
    }
    note = "offered; READY pairs written over their tokens, every other record untouched";
}

}  // namespace

void append_compact_checks(std::vector<Check>& out)
{
    out.push_back({"device.resolve_compact",
                   "lapse.resolve_compact/1, when offered: measured windows as stamp pairs, every other one "
                   "untouched for resolve",
                   &check_resolve_compact});
    out.push_back({"device.resolve_compact_strided",
                   "resolve_compact_strided, when offered: pairs written in place over their tokens, every record "
                   "not READY untouched",
                   &check_resolve_compact_strided});
}

}  // namespace lapse::cli
