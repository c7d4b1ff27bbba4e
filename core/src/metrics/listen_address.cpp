#include "listen_address.hpp"

#include <lapse/core/error.hpp>

#include <arpa/inet.h>

#include <charconv>
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

}  // namespace lapse::detail
