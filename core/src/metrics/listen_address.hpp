// Internal: the address the metrics listen on, checked before anything
// binds. Loopback unless asked: window names and timings describe the
// program being measured, and a port opened to the network by a config
// left over from a test is a leak nobody chose.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lapse::detail {

struct ListenAddress {
    std::string host;       // numeric: "127.0.0.1", "::1"
    uint16_t port = 0;      // 0: the kernel picks a free one
    bool loopback = false;  // 127.0.0.0/8 or ::1
    std::string bind_spec;  // as civetweb's listening_ports wants it: "127.0.0.1:9464", "[::1]:9464"
};

// Parses "HOST:PORT": HOST a numeric IPv4 address, an IPv6 address in
// brackets, or "localhost" (127.0.0.1); PORT 0 to 65535. An address that
// is not loopback (0.0.0.0 included) is refused unless `allow_remote`.
// Throws Error (LAPSE_ERROR_CONFIG) "<where>: '<text>' <cause>".
ListenAddress parse_listen_address(std::string_view text, bool allow_remote, const std::string& where);

}  // namespace lapse::detail
