// TestHost: a test double for the lapse host, just enough to load a plugin
// file with dlopen, negotiate, and open devices from a flat config.
//
// The CUDA plugin's tests use it instead of the core library so they test
// the plugin alone, through the C ABI exactly as any host calls it; the
// core's own loader is tested in tests/core and the conformance suite.
#pragma once

#include <lapse/lapse.h>

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace lapse::test {

using ConfigValue = std::variant<std::string, int64_t, double, bool>;
using ConfigTable = std::map<std::string, ConfigValue>;

class TestHost {
public:
    // Loads the plugin file and runs its entry point. Throws on failure.
    explicit TestHost(const std::string& plugin_path, uint32_t abi_major = LAPSE_ABI_MAJOR)
    {
        host_.struct_size = sizeof(lapse_host);
        host_.abi_major = abi_major;
        host_.abi_minor = LAPSE_ABI_MINOR;
        host_.host_name = "lapse TestHost (tests/cuda)";
        host_.host_data = this;
        host_.log = &log_cb;
        host_.config_string = &string_cb;
        host_.config_int = &int_cb;
        host_.config_double = &double_cb;
        host_.config_bool = &bool_cb;
        host_.config_child = &child_cb;
        host_.config_error = &error_cb;
        host_.open_backend = &open_backend_cb;
        host_.close_backend = &close_backend_cb;
        host_.clock_ns = &clock_cb;

        library_ = dlopen(plugin_path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (library_ == nullptr) throw std::runtime_error(std::string("dlopen: ") + dlerror());
        auto entry = reinterpret_cast<lapse_plugin_entry_fn>(dlsym(library_, LAPSE_ENTRY_SYMBOL));
        if (entry == nullptr) throw std::runtime_error("no " LAPSE_ENTRY_SYMBOL);
        plugin_ = entry(&host_);
    }
    ~TestHost()
    {
        if (library_ != nullptr) dlclose(library_);
    }
    TestHost(const TestHost&) = delete;
    TestHost& operator=(const TestHost&) = delete;

    const lapse_plugin* plugin() const { return plugin_; }
    void* library() const { return library_; }

    // Opens a device; on failure returns the status and leaves the message in
    // last_error().
    lapse_status open(const ConfigTable& config, lapse_device** out)
    {
        config_ = config;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            read_keys_.clear();
        }
        error_ = lapse_error{};
        error_.struct_size = sizeof error_;
        *out = nullptr;
        return plugin_->open(&host_, reinterpret_cast<const lapse_config*>(&config_), out, &error_);
    }
    const lapse_error& last_error() const { return error_; }

    std::set<std::string> read_keys() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return read_keys_;
    }
    std::vector<std::string> logs() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return logs_;
    }

private:
    static TestHost& self(const lapse_host* h) { return *static_cast<TestHost*>(h->host_data); }
    static const ConfigTable& table(const lapse_config* node) { return *reinterpret_cast<const ConfigTable*>(node); }

    static void log_cb(const lapse_host* h, lapse_log_level level, const char* message)
    {
        TestHost& t = self(h);
        std::lock_guard<std::mutex> lock(t.mutex_);
        t.logs_.push_back(std::to_string(static_cast<int>(level)) + " " + message);
    }

    template <class T>
    static lapse_status get(const lapse_host* h, const lapse_config* node, const char* key, T fallback, T* out,
                            lapse_error* error)
    {
        TestHost& t = self(h);
        {
            std::lock_guard<std::mutex> lock(t.mutex_);
            t.read_keys_.insert(key);
        }
        const ConfigTable& c = table(node);
        auto it = c.find(key);
        if (it == c.end()) {
            *out = fallback;
            return LAPSE_OK;
        }
        if (const T* v = std::get_if<T>(&it->second)) {
            *out = *v;
            return LAPSE_OK;
        }
        if (error != nullptr) {
            error->code = LAPSE_ERROR_CONFIG;
            std::snprintf(error->message, sizeof error->message, "test.toml:1:1: %s: wrong type", key);
        }
        return LAPSE_ERROR_CONFIG;
    }

    static lapse_status string_cb(const lapse_host* h, const lapse_config* node, const char* key,
                                  const char* fallback, const char** out, lapse_error* error)
    {
        TestHost& t = self(h);
        std::string value;
        lapse_status s = get<std::string>(h, node, key, fallback != nullptr ? fallback : "", &value, error);
        if (s != LAPSE_OK) return s;
        std::lock_guard<std::mutex> lock(t.mutex_);
        t.strings_.push_back(value);  // kept alive until the host dies
        *out = t.strings_.back().c_str();
        return LAPSE_OK;
    }
    static lapse_status int_cb(const lapse_host* h, const lapse_config* node, const char* key, int64_t fallback,
                               int64_t* out, lapse_error* error)
    {
        return get<int64_t>(h, node, key, fallback, out, error);
    }
    static lapse_status double_cb(const lapse_host* h, const lapse_config* node, const char* key, double fallback,
                                  double* out, lapse_error* error)
    {
        return get<double>(h, node, key, fallback, out, error);
    }
    static lapse_status bool_cb(const lapse_host* h, const lapse_config* node, const char* key, int fallback,
                                int* out, lapse_error* error)
    {
        bool v = false;
        lapse_status s = get<bool>(h, node, key, fallback != 0, &v, error);
        *out = v ? 1 : 0;
        return s;
    }
    static lapse_status child_cb(const lapse_host*, const lapse_config*, const char*, const lapse_config** out,
                                 lapse_error*)
    {
        *out = nullptr;
        return LAPSE_OK;
    }
    static lapse_status error_cb(const lapse_host*, const lapse_config*, const char* key, const char* message,
                                 lapse_error* error)
    {
        if (error != nullptr) {
            error->code = LAPSE_ERROR_CONFIG;
            std::snprintf(error->message, sizeof error->message, "test.toml:1:1: %s: %s", key ? key : "(node)",
                          message);
        }
        return LAPSE_ERROR_CONFIG;
    }
    static lapse_status open_backend_cb(const lapse_host*, const lapse_config*, lapse_backend*, lapse_error* error)
    {
        if (error != nullptr) {
            error->code = LAPSE_ERROR_UNSUPPORTED;
            std::snprintf(error->message, sizeof error->message, "TestHost does not stack backends");
        }
        return LAPSE_ERROR_UNSUPPORTED;
    }
    static void close_backend_cb(const lapse_host*, lapse_backend*) {}
    static int64_t clock_cb(const lapse_host*)
    {
        timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
    }

    lapse_host host_{};
    void* library_ = nullptr;
    const lapse_plugin* plugin_ = nullptr;
    ConfigTable config_;
    lapse_error error_{};
    mutable std::mutex mutex_;
    std::set<std::string> read_keys_;
    std::vector<std::string> logs_;
    std::list<std::string> strings_;  // a list: c_str() must stay valid
};

}  // namespace lapse::test
