// A minimal lapse_host for driving the CPU plugin through its C ABI, without
// the core library (that is tested elsewhere, and will run this plugin
// through the conformance suite). A test double: config values come from a
// map, logs are kept for assertions, every key read is remembered.
#pragma once

#include <lapse/lapse.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <variant>
#include <vector>

namespace lapse_test {

using ConfigValue = std::variant<int64_t, std::string, double, bool>;

class TestHost {
public:
    explicit TestHost(std::map<std::string, ConfigValue> config = {}) : values_(std::move(config))
    {
        std::memset(&host_, 0, sizeof host_);
        host_.struct_size = sizeof(lapse_host);
        host_.abi_major = LAPSE_ABI_MAJOR;
        host_.abi_minor = LAPSE_ABI_MINOR;
        host_.host_name = "cpu-tests TestHost";
        host_.host_data = this;
        host_.log = &log_fn;
        host_.config_string = &config_string_fn;
        host_.config_int = &config_int_fn;
        host_.config_double = &config_double_fn;
        host_.config_bool = &config_bool_fn;
        host_.config_child = &config_child_fn;
        host_.config_error = &config_error_fn;
        host_.open_backend = &open_backend_fn;
        host_.close_backend = &close_backend_fn;
        host_.clock_ns = &clock_fn;
    }
    TestHost(const TestHost&) = delete;
    TestHost& operator=(const TestHost&) = delete;

    const lapse_host* get() const { return &host_; }
    lapse_host* mutable_host() { return &host_; }
    // The node handed to open(): this host's one config table.
    const lapse_config* node() const { return reinterpret_cast<const lapse_config*>(this); }

    struct Line {
        lapse_log_level level;
        std::string text;
    };
    std::vector<Line> logs() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return logs_;
    }
    bool logged(lapse_log_level level, const std::string& needle) const
    {
        for (const auto& l : logs())
            if (l.level == level && l.text.find(needle) != std::string::npos) return true;
        return false;
    }
    std::set<std::string> keys_read() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return read_;
    }

private:
    static TestHost& self(const lapse_host* h) { return *static_cast<TestHost*>(h->host_data); }
    static TestHost& self(const lapse_config* n) { return *reinterpret_cast<TestHost*>(const_cast<lapse_config*>(n)); }

    static lapse_status type_error(const char* key, const char* want, lapse_error* error)
    {
        if (error != nullptr)
            std::snprintf(error->message, sizeof error->message, "test.toml:1:1: %s: expected %s", key, want);
        if (error != nullptr) error->code = LAPSE_ERROR_CONFIG;
        return LAPSE_ERROR_CONFIG;
    }

    template <class T>
    static lapse_status get_value(const lapse_config* node, const char* key, const T& fallback, T* out,
                                  const char* want, lapse_error* error)
    {
        TestHost& h = self(node);
        std::lock_guard<std::mutex> lock(h.mutex_);
        h.read_.insert(key);
        auto it = h.values_.find(key);
        if (it == h.values_.end()) {
            *out = fallback;
            return LAPSE_OK;
        }
        if (!std::holds_alternative<T>(it->second)) return type_error(key, want, error);
        *out = std::get<T>(it->second);
        return LAPSE_OK;
    }

    static void log_fn(const lapse_host* host, lapse_log_level level, const char* message)
    {
        TestHost& h = self(host);
        std::lock_guard<std::mutex> lock(h.mutex_);
        h.logs_.push_back({level, message});
    }
    static lapse_status config_string_fn(const lapse_host*, const lapse_config* node, const char* key,
                                         const char* fallback, const char** out, lapse_error* error)
    {
        TestHost& h = self(node);
        std::lock_guard<std::mutex> lock(h.mutex_);
        h.read_.insert(key);
        auto it = h.values_.find(key);
        if (it == h.values_.end()) {
            *out = fallback;
            return LAPSE_OK;
        }
        if (!std::holds_alternative<std::string>(it->second)) return type_error(key, "a string", error);
        *out = std::get<std::string>(it->second).c_str();
        return LAPSE_OK;
    }
    static lapse_status config_int_fn(const lapse_host*, const lapse_config* node, const char* key, int64_t fallback,
                                      int64_t* out, lapse_error* error)
    {
        return get_value<int64_t>(node, key, fallback, out, "an integer", error);
    }
    static lapse_status config_double_fn(const lapse_host*, const lapse_config* node, const char* key,
                                         double fallback, double* out, lapse_error* error)
    {
        return get_value<double>(node, key, fallback, out, "a float", error);
    }
    static lapse_status config_bool_fn(const lapse_host*, const lapse_config* node, const char* key, int fallback,
                                       int* out, lapse_error* error)
    {
        bool v = fallback != 0;
        lapse_status s = get_value<bool>(node, key, fallback != 0, &v, "a boolean", error);
        *out = v ? 1 : 0;
        return s;
    }
    static lapse_status config_child_fn(const lapse_host*, const lapse_config*, const char*, const lapse_config** out,
                                        lapse_error*)
    {
        *out = nullptr;
        return LAPSE_OK;
    }
    static lapse_status config_error_fn(const lapse_host*, const lapse_config*, const char* key, const char* message,
                                        lapse_error* error)
    {
        if (error != nullptr) {
            std::snprintf(error->message, sizeof error->message, "test.toml:1:1: %s: %s", key ? key : "(node)",
                          message);
            error->code = LAPSE_ERROR_CONFIG;
        }
        return LAPSE_ERROR_CONFIG;
    }
    static lapse_status open_backend_fn(const lapse_host*, const lapse_config*, lapse_backend*, lapse_error* error)
    {
        if (error != nullptr) {
            std::snprintf(error->message, sizeof error->message, "TestHost: stacking is not offered");
            error->code = LAPSE_ERROR_UNSUPPORTED;
        }
        return LAPSE_ERROR_UNSUPPORTED;
    }
    static void close_backend_fn(const lapse_host*, lapse_backend*) {}
    static int64_t clock_fn(const lapse_host*)
    {
        timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
    }

    lapse_host host_;
    std::map<std::string, ConfigValue> values_;
    mutable std::mutex mutex_;
    std::vector<Line> logs_;
    std::set<std::string> read_;
};

}  // namespace lapse_test
