// lapse core — a window name interned once, for names known ahead: the
// habit of Tracy's static source locations.
//
//   static const lapse::Name physics("physics");   // once
//   lapse::Window w = dev.profile_start(0, physics);  // copies no text
//
// A window named by a std::string_view copies the name when it opens (the
// caller's buffer may change before the window ends); one named by a Name
// carries a pointer to text that never changes, so opening it copies
// nothing, and a capture finds the name's entry in its string table
// without hashing the text. Both record the same name.
//
// Every distinct text a Name was made with is kept for the life of the
// process (a Name may be used from any thread at any time), so make Names
// for a fixed set of names (statics, members), not one per window:
// LAPSE_SCOPE_STATIC (lapse/core/scope.hpp) does that for a literal.
#pragma once

#include <lapse/core/export.hpp>

#include <string_view>

namespace lapse {

namespace detail {
struct InternedName;
// The one entry of `text` (made on first use; null for an empty text).
// Throws std::bad_alloc. [any thread]
LAPSE_CORE_API const InternedName* intern_name(std::string_view text);
LAPSE_CORE_API std::string_view interned_text(const InternedName* name) noexcept;
}  // namespace detail

class Name {
public:
    // An empty text names nothing: a window opened with it is unnamed.
    // Throws std::bad_alloc. [any thread]
    explicit Name(std::string_view text) : entry_(detail::intern_name(text)) {}

    std::string_view text() const noexcept { return detail::interned_text(entry_); }
    bool empty() const noexcept { return entry_ == nullptr; }
    // Two Names of one text share their entry.
    const detail::InternedName* entry() const noexcept { return entry_; }
    // The Name of an entry another Name gave (entry()), or the empty Name
    // for null: how the C and Python hosts carry a Name as a pointer.
    static Name from_entry(const detail::InternedName* entry) noexcept { return Name(entry); }

private:
    explicit Name(const detail::InternedName* entry) noexcept : entry_(entry) {}
    const detail::InternedName* entry_;
};

}  // namespace lapse
