// libFuzzer target: CaptureReader on arbitrary bytes.
//
// A capture is read after crashes and from other machines, so for ANY
// input the reader must either refuse it with lapse::Error (not a capture)
// or stream it to the end, reporting damage; anything else (another
// exception type, a crash, a sanitizer report, an allocation sized by the
// input, a hang) is a bug. Seeds: tests/fuzz/corpus/capture/ (real
// captures of `lapse run --capture`).
#include <lapse/core/capture.hpp>
#include <lapse/core/error.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    try {
        lapse::CaptureReader reader(std::make_unique<std::istringstream>(std::string(reinterpret_cast<const char*>(data), size)),
                                    "fuzz.lapse-capture");
        lapse::CapturedWindow w;
        uint64_t n = 0;
        while (reader.next(w)) {
            // What a record yields is bounded by the input it came from.
            if (w.name.size() > size || w.cause.size() > size) __builtin_trap();
            if (w.state == lapse::DurationState::ready && w.end_ns - w.start_ns < 0 && w.end_ns >= w.start_ns) __builtin_trap();
            ++n;
        }
        if (n != reader.windows_read()) __builtin_trap();
        for (const auto& d : reader.damage())
            if (d.offset > size) __builtin_trap();
    } catch (const lapse::Error&) {
        // The documented refusal.
    }
    return 0;
}
