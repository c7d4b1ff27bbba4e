// TestHost: a test double for the lapse host, just enough to load and open
// a plugin without the core library: config values from a std::map, a log
// that keeps every line and counts warnings and errors (the Vulkan plugin
// logs validation-layer messages at ERROR, so a test fails on any), and
// the monotonic clock. Stacking is refused (no plugin here needs it).
#pragma once

#include <lapse/lapse.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

namespace lapse::test {

class TestHost {
public:
    using Value = std::variant<int64_t, double, bool, std::string>;
    using Config = std::map<std::string, Value>;

    explicit TestHost(Config config = {}) : config_(std::move(config))
    {
        host_.struct_size = sizeof(lapse_host);
        host_.abi_major = LAPSE_ABI_MAJOR;
        host_.abi_minor = LAPSE_ABI_MINOR;
        host_.host_name = "lapse vulkan tests (TestHost)";
        host_.host_data = this;
        host_.log = &log;
        host_.config_string = &config_string;
        host_.config_int = &config_int;
        host_.config_double = &config_double;
        host_.config_bool = &config_bool;
        host_.config_child = &config_child;
        host_.config_error = &config_error;
        host_.open_backend = &open_backend;
        host_.close_backend = &close_backend;
        host_.clock_ns = &clock_ns;
    }
    TestHost(const TestHost&) = delete;
    TestHost& operator=(const TestHost&) = delete;

    const lapse_host* get() const noexcept { return &host_; }
    const lapse_config* node() const noexcept { return reinterpret_cast<const lapse_config*>(&config_); }

    int errors() const noexcept { return errors_.load(); }
    int warnings() const noexcept { return warnings_.load(); }
    std::vector<std::string> lines() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return lines_;
    }
    std::string joined_lines() const
    {
        std::string all;
        for (const auto& l : lines()) all += l + "\n";
        return all;
    }

private:
    static TestHost& self(const lapse_host* h) { return *static_cast<TestHost*>(h->host_data); }
    static const Config& cfg(const lapse_config* node) { return *reinterpret_cast<const Config*>(node); }

    static void log(const lapse_host* h, lapse_log_level level, const char* message)
    {
        TestHost& t = self(h);
        if (level >= LAPSE_LOG_ERROR) t.errors_.fetch_add(1);
        else if (level == LAPSE_LOG_WARN) t.warnings_.fetch_add(1);
        std::lock_guard<std::mutex> lock(t.mutex_);
        t.lines_.push_back(std::to_string(static_cast<int>(level)) + ": " + message);
    }

    static lapse_status type_error(lapse_error* e, const char* key, const char* wanted)
    {
        if (e != nullptr && e->struct_size >= sizeof(lapse_error)) {
            e->code = LAPSE_ERROR_CONFIG;
            std::snprintf(e->message, sizeof e->message, "test.toml:1:1: %s: expected %s", key, wanted);
        }
        return LAPSE_ERROR_CONFIG;
    }

    template <class T>
    static const T* find(const lapse_config* node, const char* key, bool& present)
    {
        present = false;
        if (node == nullptr) return nullptr;
        auto it = cfg(node).find(key);
        if (it == cfg(node).end()) return nullptr;
        present = true;
        return std::get_if<T>(&it->second);
    }

    static lapse_status config_string(const lapse_host*, const lapse_config* node, const char* key,
                                      const char* fallback, const char** out, lapse_error* e)
    {
        bool present;
        const std::string* v = find<std::string>(node, key, present);
        if (!present) return *out = fallback, LAPSE_OK;
        if (v == nullptr) return type_error(e, key, "a string");
        *out = v->c_str();
        return LAPSE_OK;
    }
    static lapse_status config_int(const lapse_host*, const lapse_config* node, const char* key, int64_t fallback,
                                   int64_t* out, lapse_error* e)
    {
        bool present;
        const int64_t* v = find<int64_t>(node, key, present);
        if (!present) return *out = fallback, LAPSE_OK;
        if (v == nullptr) return type_error(e, key, "an integer");
        *out = *v;
        return LAPSE_OK;
    }
    static lapse_status config_double(const lapse_host*, const lapse_config* node, const char* key, double fallback,
                                      double* out, lapse_error* e)
    {
        bool present;
        const double* v = find<double>(node, key, present);
        if (!present) return *out = fallback, LAPSE_OK;
        if (v == nullptr) {
            if (const int64_t* i = find<int64_t>(node, key, present)) return *out = static_cast<double>(*i), LAPSE_OK;
            return type_error(e, key, "a number");
        }
        *out = *v;
        return LAPSE_OK;
    }
    static lapse_status config_bool(const lapse_host*, const lapse_config* node, const char* key, int fallback,
                                    int* out, lapse_error* e)
    {
        bool present;
        const bool* v = find<bool>(node, key, present);
        if (!present) return *out = fallback, LAPSE_OK;
        if (v == nullptr) return type_error(e, key, "a boolean");
        *out = *v ? 1 : 0;
        return LAPSE_OK;
    }
    static lapse_status config_child(const lapse_host*, const lapse_config*, const char*, const lapse_config** out,
                                     lapse_error*)
    {
        *out = nullptr;
        return LAPSE_OK;
    }
    static lapse_status config_error(const lapse_host*, const lapse_config*, const char* key, const char* message,
                                     lapse_error* e)
    {
        if (e != nullptr && e->struct_size >= sizeof(lapse_error)) {
            e->code = LAPSE_ERROR_CONFIG;
            std::snprintf(e->message, sizeof e->message, "test.toml:1:1: %s: %s", key ? key : "(table)", message);
        }
        return LAPSE_ERROR_CONFIG;
    }
    static lapse_status open_backend(const lapse_host*, const lapse_config*, lapse_backend*, lapse_error* e)
    {
        if (e != nullptr && e->struct_size >= sizeof(lapse_error)) {
            e->code = LAPSE_ERROR_UNSUPPORTED;
            std::snprintf(e->message, sizeof e->message, "TestHost does not stack backends");
        }
        return LAPSE_ERROR_UNSUPPORTED;
    }
    static void close_backend(const lapse_host*, lapse_backend*) {}
    static int64_t clock_ns(const lapse_host*)
    {
        timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
    }

    Config config_;
    lapse_host host_{};
    std::atomic<int> errors_{0};
    std::atomic<int> warnings_{0};
    mutable std::mutex mutex_;
    std::vector<std::string> lines_;
};

}  // namespace lapse::test
