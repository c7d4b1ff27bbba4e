// Internal: the session's archive format (Boost.Serialization text archive).
#pragma once

#include <lapse/core/session.hpp>

#include <iosfwd>
#include <string>
#include <vector>

namespace lapse::detail {

struct SessionData {
    BackendRecord backend;
    std::vector<WindowRecord> windows;
};

void save_session(const SessionData& data, std::ostream& out);
// Bounded: throws Error naming `source_name` on anything it cannot trust.
SessionData load_session(std::istream& in, const std::string& source_name);

}  // namespace lapse::detail
