// Internal: the session file format.
//
// Format 2 (what save writes): one header line, then the archive itself,
//
//   lapse-session 2 sha256 <64 hex digits> <archive size in bytes>\n
//   <the Boost.Serialization text archive of SessionData>
//
// so a damaged file is found by its checksum before a byte of it is parsed.
// Format 1 (lapse 0.1, before the header existed) is the bare archive; it
// still loads, marked unverified: nothing can tell damage in it from data.
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

struct LoadedSession {
    SessionData data;
    bool verified = false;  // format 2, checksum matched
};

// The checksummed file (format 2).
void save_session(const SessionData& data, std::ostream& out);
// Either format. Bounded: throws Error naming `source_name` on anything it
// cannot trust (a checksum that does not match, a header or archive it
// cannot read).
LoadedSession load_session(std::istream& in, const std::string& source_name);

// The archive alone (session_archive.cpp). read_archive throws Error
// naming `source_name`; it checks every count and size before allocating.
void write_archive(const SessionData& data, std::ostream& out);
SessionData read_archive(std::istream& in, const std::string& source_name);

}  // namespace lapse::detail
