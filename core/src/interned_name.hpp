// lapse core, internal: what a lapse::Name points at (lapse/core/name.hpp).
#pragma once

#include <cstdint>
#include <string>

namespace lapse::detail {

struct InternedName {
    std::string text;
    // 0, 1, 2, ... in the order texts were first interned: a capture's
    // writer maps it to its string id with an array, not a hash.
    uint32_t index = 0;
};

}  // namespace lapse::detail
