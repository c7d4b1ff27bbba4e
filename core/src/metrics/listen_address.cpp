#include "listen_address.hpp"

#include <lapse/core/error.hpp>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>

#include <charconv>
#include <cstdlib>
#include <cstring>

namespace lapse::detail {

ListenAddress parse_listen_address(std::string_view text, bool allow_remote, const std::string& where)
{
    auto fail = [&](const std::string& cause) {
        return Error(LAPSE_ERROR_CONFIG, where + ": '" + std::string(text) + "' " + cause);
    };
    const std::string example = " (say \"127.0.0.1:9464\", \"[::1]:9464\"; port 0 picks a free one)";
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || colon == 0) throw fail("is not HOST:PORT" + example);
    std::string_view host = text.substr(0, colon);
    const std::string_view port_text = text.substr(colon + 1);
    unsigned port = 0;
    const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (port_text.empty() || ec != std::errc{} || end != port_text.data() + port_text.size() || port > 65535)
        throw fail("has no port number from 0 to 65535 after the last ':'" + example);

    ListenAddress out;
    out.port = static_cast<uint16_t>(port);
    bool v6 = false;
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
        v6 = true;
    } else if (host.find(':') != std::string_view::npos) {
        throw fail("has an IPv6 address without brackets" + example);
    }
    out.host = host == "localhost" ? "127.0.0.1" : std::string(host);
    if (v6) {
        in6_addr a{};
        if (::inet_pton(AF_INET6, out.host.c_str(), &a) != 1) throw fail("is not a numeric IPv6 address in brackets");
        out.loopback = IN6_IS_ADDR_LOOPBACK(&a);
        out.bind_spec = "[" + out.host + "]:" + std::to_string(port);
    } else {
        in_addr a{};
        if (::inet_pton(AF_INET, out.host.c_str(), &a) != 1)
            throw fail("is not a numeric IPv4 address (or localhost); host names are not resolved" + example);
        out.loopback = (ntohl(a.s_addr) >> 24) == 127;
        out.bind_spec = out.host + ":" + std::to_string(port);
    }
    if (!out.loopback && !allow_remote)
        throw fail("is not a loopback address: it would serve this program's window names and timings to the "
                   "network; set allow_remote = true in [metrics] (lapse run --metrics-allow-remote) to mean it");
    return out;
}

SocketAddress socket_address(const ListenAddress& address, uint16_t port) noexcept
{
    SocketAddress out;
    if (address.host.find(':') != std::string::npos) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&out.storage);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(port);
        ::inet_pton(AF_INET6, address.host.c_str(), &a->sin6_addr);
        out.size = sizeof *a;
    } else {
        auto* a = reinterpret_cast<sockaddr_in*>(&out.storage);
        a->sin_family = AF_INET;
        a->sin_port = htons(port);
        ::inet_pton(AF_INET, address.host.c_str(), &a->sin_addr);
        out.size = sizeof *a;
    }
    return out;
}

namespace {

// Whether `fd` is a listening socket bound to `address` (family, host and
// port; nothing else of a sockaddr says where it listens).
bool listens_on(int fd, const SocketAddress& address) noexcept
{
    int accepting = 0;
    socklen_t length = sizeof accepting;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &length) != 0 || accepting == 0) return false;
    sockaddr_storage bound{};
    socklen_t size = sizeof bound;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &size) != 0) return false;
    if (bound.ss_family != address.storage.ss_family) return false;
    if (bound.ss_family == AF_INET) {
        const auto& b = reinterpret_cast<const sockaddr_in&>(bound);
        const auto& a = reinterpret_cast<const sockaddr_in&>(address.storage);
        return b.sin_port == a.sin_port && b.sin_addr.s_addr == a.sin_addr.s_addr;
    }
    if (bound.ss_family == AF_INET6) {
        const auto& b = reinterpret_cast<const sockaddr_in6&>(bound);
        const auto& a = reinterpret_cast<const sockaddr_in6&>(address.storage);
        return b.sin6_port == a.sin6_port && std::memcmp(&b.sin6_addr, &a.sin6_addr, sizeof a.sin6_addr) == 0;
    }
    return false;
}

}  // namespace

std::vector<int> listening_sockets(const SocketAddress& address)
{
    std::vector<int> found;
    DIR* fds = ::opendir("/proc/self/fd");
    if (fds == nullptr) return found;
    const int own = ::dirfd(fds);
    while (const dirent* entry = ::readdir(fds)) {
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
        const int fd = std::atoi(entry->d_name);
        if (fd != own && listens_on(fd, address)) found.push_back(fd);
    }
    ::closedir(fds);
    return found;
}

void stop_listening(const std::vector<int>& sockets, const SocketAddress& address) noexcept
{
    for (const int fd : sockets)
        if (listens_on(fd, address)) ::shutdown(fd, SHUT_RDWR);
}

}  // namespace lapse::detail
