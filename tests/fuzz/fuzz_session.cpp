// libFuzzer target: Session::load on arbitrary bytes.
//
// The loader reads untrusted files, so for ANY input it must either return
// a Session or throw lapse::Error; anything else (another exception type,
// a crash, a sanitizer report, an allocation sized by the input, a hang) is
// a bug. Seeds: tests/fuzz/corpus/session/ (real saved sessions, format 1
// without a checksum and format 2 with one: both loaders stay reachable).
#include <lapse/core/error.hpp>
#include <lapse/core/session.hpp>

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
    try {
        lapse::Session s = lapse::Session::load(in, "fuzz.lapse-session");
        // What loaded must save and load back to the same windows.
        std::ostringstream out;
        s.save(out);
        std::istringstream again(out.str());
        lapse::Session t = lapse::Session::load(again, "fuzz.roundtrip");
        if (t.windows() != s.windows() || !(t.backend() == s.backend())) __builtin_trap();
    } catch (const lapse::Error&) {
        // The documented refusal.
    }
    return 0;
}
