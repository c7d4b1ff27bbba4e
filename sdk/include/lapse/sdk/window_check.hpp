// lapse SDK (C++) — what a window-table call found (window_table.hpp),
// and the phrase a backend puts in its error message for it.
#pragma once

#include <cstdint>

namespace lapse::sdk {

// What a table call found. `ok` means it took effect; the rest say why not.
enum class WindowCheck : uint8_t {
    ok = 0,
    pending,     // take(): closed, but the device still holds it (not stamped yet)
    unknown,     // never handed out by this table
    wrong_tag,   // a live window, opened with another tag (stream)
    still_open,  // take(): not closed yet
    closed,      // close(): closed already
    abandoned,   // abandoned; the device still holds it
    resolved,    // its life ended in take(): resolved already
    forgotten,   // its life ended in abandon()
    expired,     // its record has been reused since: an old token
    busy         // claim(): another thread has the record claimed right now
};

// A short phrase for messages: "token 42 <phrase>".
inline const char* describe(WindowCheck check) noexcept
{
    switch (check) {
    case WindowCheck::ok: return "is fine";
    case WindowCheck::pending: return "is closed but not measured yet";
    case WindowCheck::unknown: return "was never opened on this device";
    case WindowCheck::wrong_tag: return "belongs to another stream";
    case WindowCheck::still_open: return "is still open (close it before resolving)";
    case WindowCheck::closed: return "was closed already (a window closes once)";
    case WindowCheck::abandoned: return "was abandoned";
    case WindowCheck::resolved: return "was resolved already";
    case WindowCheck::forgotten: return "was abandoned";
    case WindowCheck::expired: return "is no longer live (its window ended long ago)";
    case WindowCheck::busy: return "is in use by another call right now";
    }
    return "is invalid";
}

}  // namespace lapse::sdk
