// The process's interned window names (lapse/core/name.hpp): one entry per
// distinct text, never freed, so that a Name and every note pointing at
// its entry stay valid wherever they are read.
#include "interned_name.hpp"

#include <lapse/core/name.hpp>

#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>

namespace lapse::detail {

namespace {

struct NameTable {
    std::mutex mutex;
    // Keyed by a view of each entry's own text.
    std::unordered_map<std::string_view, std::unique_ptr<InternedName>> entries;
};

NameTable& table()
{
    // Never destroyed: a capture's collector may still read an entry while
    // the process exits. Reachable from this static, so not a leak.
    static NameTable* t = new NameTable;
    return *t;
}

}  // namespace

const InternedName* intern_name(std::string_view text)
{
    if (text.empty()) return nullptr;
    NameTable& t = table();
    std::lock_guard lock(t.mutex);
    if (auto it = t.entries.find(text); it != t.entries.end()) return it->second.get();
    auto entry = std::make_unique<InternedName>();
    entry->text.assign(text);
    entry->index = static_cast<uint32_t>(t.entries.size());
    const InternedName* p = entry.get();
    t.entries.emplace(std::string_view(entry->text), std::move(entry));
    return p;
}

std::string_view interned_text(const InternedName* name) noexcept
{
    return name != nullptr ? std::string_view(name->text) : std::string_view{};
}

}  // namespace lapse::detail
