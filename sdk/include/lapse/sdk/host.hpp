// lapse SDK (C++) — the host's services, seen from a plugin.
//
// Host wraps the lapse_host a plugin receives; Config reads one config node
// (throwing sdk::Error with the host's file:line:column message); Backend
// owns a backend the host opened for a stacking plugin and closes it.
#pragma once

#include <lapse/lapse.h>
#include <lapse/sdk/error.hpp>

#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <utility>

namespace lapse::sdk {

// CLOCK_MONOTONIC in ns, read directly: the host's clock_ns service is the
// same clock, but a hot path should not pay an indirect call for it.
inline int64_t monotonic_ns() noexcept
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

class Backend;

// Whether `host` carries `service` (its struct reaches the field, the
// pointer is set): a host of an older minor lacks what later minors
// appended. LAPSE_SDK_HOST_OFFERS(host, open_backend)
#define LAPSE_SDK_HOST_OFFERS(host, service)                                                        \
    ((host) != nullptr && (host)->struct_size >= LAPSE_SDK_SIZE_THROUGH(lapse_host, service) && \
     (host)->service != nullptr)

class Host {
public:
    explicit Host(const lapse_host* host) noexcept : host_(host) {}
    const lapse_host* get() const noexcept { return host_; }

    // [thread-safe] Not for the hot path.
    void log(lapse_log_level level, const std::string& message) const noexcept
    {
        if (LAPSE_SDK_HOST_OFFERS(host_, log)) host_->log(host_, level, message.c_str());
    }
    void info(const std::string& m) const noexcept { log(LAPSE_LOG_INFO, m); }
    void warn(const std::string& m) const noexcept { log(LAPSE_LOG_WARN, m); }
    void error(const std::string& m) const noexcept { log(LAPSE_LOG_ERROR, m); }

    // Opens the backend a child config node names. Throws sdk::Error.
    Backend open_backend(const lapse_config* node) const;

private:
    const lapse_host* host_;
};

// One config node. Valid only during the `open` call that received it.
class Config {
public:
    Config(const lapse_host* host, const lapse_config* node) noexcept : host_(host), node_(node) {}
    const lapse_config* node() const noexcept { return node_; }
    const lapse_host* host() const noexcept { return host_; }

    std::string string(const char* key, const char* fallback) const
    {
        const char* out = nullptr;
        require(LAPSE_SDK_HOST_OFFERS(host_, config_string), "config_string");
        check(host_->config_string(host_, node_, key, fallback, &out, &error_));
        return out != nullptr ? std::string(out) : std::string();
    }
    int64_t integer(const char* key, int64_t fallback) const
    {
        int64_t out = fallback;
        require(LAPSE_SDK_HOST_OFFERS(host_, config_int), "config_int");
        check(host_->config_int(host_, node_, key, fallback, &out, &error_));
        return out;
    }
    // An integer in [min, max], or a config error naming the range.
    int64_t integer(const char* key, int64_t fallback, int64_t min, int64_t max) const
    {
        int64_t v = integer(key, fallback);
        if (v < min || v > max)
            reject(key, "must be between " + std::to_string(min) + " and " + std::to_string(max) +
                            ", got " + std::to_string(v));
        return v;
    }
    double real(const char* key, double fallback) const
    {
        double out = fallback;
        require(LAPSE_SDK_HOST_OFFERS(host_, config_double), "config_double");
        check(host_->config_double(host_, node_, key, fallback, &out, &error_));
        return out;
    }
    bool boolean(const char* key, bool fallback) const
    {
        int out = fallback ? 1 : 0;
        require(LAPSE_SDK_HOST_OFFERS(host_, config_bool), "config_bool");
        check(host_->config_bool(host_, node_, key, fallback ? 1 : 0, &out, &error_));
        return out != 0;
    }
    // A child table, or a Config with a null node when absent.
    Config child(const char* key) const
    {
        const lapse_config* out = nullptr;
        require(LAPSE_SDK_HOST_OFFERS(host_, config_child), "config_child");
        check(host_->config_child(host_, node_, key, &out, &error_));
        return Config(host_, out);
    }
    explicit operator bool() const noexcept { return node_ != nullptr; }

    // Throws a config error located at `key` (or at this node when null).
    [[noreturn]] void reject(const char* key, const std::string& message) const
    {
        if (!LAPSE_SDK_HOST_OFFERS(host_, config_error))
            throw Error(LAPSE_ERROR_CONFIG, std::string(key != nullptr ? key : "config") + ": " + message);
        host_->config_error(host_, node_, key, message.c_str(), &error_);
        throw Error(LAPSE_ERROR_CONFIG, error_.message);
    }

private:
    static void require(bool offered, const char* service)
    {
        if (!offered)
            throw Error(LAPSE_ERROR_UNSUPPORTED, std::string("the host offers no ") + service +
                                                     " (its lapse_host is too short or the service is null)");
    }

    void check(lapse_status status) const
    {
        if (status < 0) throw Error(status, error_.message);
    }

    const lapse_host* host_;
    const lapse_config* node_;
    mutable lapse_error error_ = make_error();
};

// A backend opened through the host (stacking). Closes it on destruction.
class Backend {
public:
    Backend() noexcept = default;
    Backend(const lapse_host* host, lapse_backend backend) noexcept : host_(host), backend_(backend) {}
    Backend(Backend&& other) noexcept : host_(other.host_), backend_(other.backend_)
    {
        other.backend_.device = nullptr;
    }
    Backend& operator=(Backend&& other) noexcept
    {
        if (this != &other) {
            reset();
            host_ = other.host_;
            backend_ = other.backend_;
            other.backend_.device = nullptr;
        }
        return *this;
    }
    Backend(const Backend&) = delete;
    Backend& operator=(const Backend&) = delete;
    ~Backend() { reset(); }

    const lapse_plugin& plugin() const noexcept { return *backend_.plugin; }
    lapse_device* device() const noexcept { return backend_.device; }
    explicit operator bool() const noexcept { return backend_.device != nullptr; }

    void reset() noexcept
    {
        if (backend_.device != nullptr && host_ != nullptr) host_->close_backend(host_, &backend_);
        backend_.device = nullptr;
    }

private:
    const lapse_host* host_ = nullptr;
    lapse_backend backend_{};
};

inline Backend Host::open_backend(const lapse_config* node) const
{
    if (!LAPSE_SDK_HOST_OFFERS(host_, open_backend) || !LAPSE_SDK_HOST_OFFERS(host_, close_backend))
        throw Error(LAPSE_ERROR_UNSUPPORTED, "the host offers no open_backend (its lapse_host is too short)");
    lapse_backend backend{};
    backend.struct_size = sizeof(lapse_backend);
    lapse_error error = make_error();
    lapse_status status = host_->open_backend(host_, node, &backend, &error);
    if (status < 0) throw Error(status, error.message);
    return Backend(host_, backend);
}

}  // namespace lapse::sdk
