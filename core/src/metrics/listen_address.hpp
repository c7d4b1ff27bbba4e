// Internal: the address the metrics listen on, checked before anything
// binds, and the sockets listening there. Loopback unless asked: window
// names and timings describe the program being measured, and a port opened
// to the network by a config left over from a test is a leak nobody chose.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

// `address` with `port` as a socket address, for bind() and for finding
// the sockets bound to it.
struct SocketAddress {
    sockaddr_storage storage{};
    socklen_t size = 0;
};
SocketAddress socket_address(const ListenAddress& address, uint16_t port) noexcept;

// The listening TCP sockets of this process bound to exactly `address`
// (Linux: read from /proc/self/fd; none where that cannot be read).
std::vector<int> listening_sockets(const SocketAddress& address);

// shutdown()s each of `sockets` that still listens on `address`: a thread
// blocked in poll() or accept() on it wakes at once, and no connection is
// accepted after. The socket stays open (its owner closes it).
void stop_listening(const std::vector<int>& sockets, const SocketAddress& address) noexcept;

}  // namespace lapse::detail
