// Internal: SHA-256 of bytes in memory, as 64 lowercase hex digits (the
// session archive's checksum). sha256_of_descriptor (plugin_search.hpp)
// hashes a file.
#pragma once

#include <string>
#include <string_view>

namespace lapse::detail {

// Throws Error (LAPSE_ERROR_INTERNAL) only if libcrypto fails.
std::string sha256_of_bytes(std::string_view bytes);

}  // namespace lapse::detail
