#include "scrape.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <sstream>
#include <stdexcept>

namespace metrics_test {

std::string scrape(uint16_t port)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval timeout{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        const std::string why = std::strerror(errno);
        ::close(fd);
        throw std::runtime_error("connect to 127.0.0.1:" + std::to_string(port) + ": " + why);
    }
    // HTTP/1.0: no chunked body, the server closes when done.
    const std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
        ::close(fd);
        throw std::runtime_error("send failed");
    }
    std::string answer;
    char buf[65536];
    for (;;) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        answer.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    const std::size_t body = answer.find("\r\n\r\n");
    if (answer.rfind("HTTP/1.", 0) != 0 || answer.find(" 200 ") == std::string::npos || body == std::string::npos)
        throw std::runtime_error("GET /metrics did not answer 200: " + answer.substr(0, 200));
    return answer.substr(body + 4);
}

std::vector<Sample> parse(const std::string& text)
{
    std::vector<Sample> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        Sample s;
        std::size_t i = line.find_first_of("{ ");
        s.name = line.substr(0, i);
        if (i != std::string::npos && line[i] == '{') {
            ++i;
            while (i < line.size() && line[i] != '}') {
                const std::size_t eq = line.find('=', i);
                const std::string key = line.substr(i, eq - i);
                std::string value;
                std::size_t j = eq + 2;  // past ="
                for (; j < line.size() && line[j] != '"'; ++j) {
                    if (line[j] == '\\' && j + 1 < line.size()) {
                        ++j;
                        value += line[j] == 'n' ? '\n' : line[j];
                    } else {
                        value += line[j];
                    }
                }
                s.labels[key] = value;
                i = j + 1;
                if (i < line.size() && line[i] == ',') ++i;
            }
            ++i;
        }
        s.value = std::stod(line.substr(i));
        out.push_back(std::move(s));
    }
    return out;
}

double value(const std::vector<Sample>& samples, const std::string& name,
             const std::map<std::string, std::string>& match)
{
    double found = -1;
    int hits = 0;
    for (const Sample& s : samples) {
        if (s.name != name) continue;
        bool all = true;
        for (const auto& [k, v] : match) {
            auto it = s.labels.find(k);
            all = all && it != s.labels.end() && it->second == v;
        }
        if (all) {
            found = s.value;
            ++hits;
        }
    }
    if (hits > 1) throw std::runtime_error(name + ": " + std::to_string(hits) + " samples match, expected one");
    return found;
}

std::size_t count(const std::vector<Sample>& samples, const std::string& name)
{
    std::size_t n = 0;
    for (const Sample& s : samples) n += s.name == name;
    return n;
}

}  // namespace metrics_test
