// lapse core, internal (installed, included by the public headers): what
// Window and Duration point at, and the out-of-line calls their inline
// members make to give it up.
#pragma once

#include <lapse/core/export.hpp>
#include <lapse/window.h>

#include <string_view>

namespace lapse::detail {

class DeviceCore;
struct WindowNote;  // name, thread and error message: allocated only when needed
LAPSE_CORE_API void abandon_token(DeviceCore* device, lapse_token token) noexcept;
LAPSE_CORE_API void free_note(WindowNote* note) noexcept;
// What the destructors call when there is something to give up (a token
// still held by `device`, when not null; a note, when not null): one
// out-of-line call, so the inline destructors are a single test.
LAPSE_CORE_API void release_parts(DeviceCore* device, lapse_token token, WindowNote* note) noexcept;
LAPSE_CORE_API std::string_view note_name(const WindowNote* note) noexcept;
// A named window's note, made when it opens (reused from this thread's
// spares once warm). Throws std::bad_alloc like new.
LAPSE_CORE_API WindowNote* make_name_note(std::string_view name);
// The same for a lapse::Name's entry (non-null): nothing is copied.
struct InternedName;
LAPSE_CORE_API WindowNote* make_interned_note(const InternedName* name);
// Hands a named window that closed pending on `device` to the capture the
// device records into, if any (recorded exactly once from then on, whether
// its Duration is kept, resolved or dropped).
LAPSE_CORE_API void capture_pending(DeviceCore* device, WindowNote* note, lapse_token token, lapse_stream stream) noexcept;
LAPSE_CORE_API std::string_view note_message(const WindowNote* note) noexcept;

}  // namespace lapse::detail
