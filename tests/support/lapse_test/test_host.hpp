// TEST DOUBLE of the lapse host: the services a plugin gets through
// `lapse_host` (sdk/include/lapse/host.h), without the core library, so the
// plugin suites (tests/cpu, tests/vulkan, tests/cuda) test a plugin alone,
// through the C ABI exactly as any host calls it. The core's own host is
// tested in tests/core, tests/hardening and the conformance suite.
//
// What this double does, for every suite alike:
//  - config: one flat table from a std::map (no child tables: config_child
//    answers "absent"). An absent key yields the fallback; a present key of
//    another type is LAPSE_ERROR_CONFIG with "test.toml:1:1: <key>: expected
//    <type>"; an integer is accepted where a number is asked for, as the
//    core does. Every key a plugin asks for is remembered (keys_read()), so a
//    test can check that a plugin reads every key it accepts (the core
//    refuses the ones it never read). A null node answers the fallback.
//  - log: every line is kept with its level (logs(), logged(), lines()),
//    and warnings and errors are counted (a Vulkan test fails on any ERROR:
//    that is where the plugin reports validation-layer messages).
//  - stacking (open_backend) is refused: no plugin under test here needs it.
//  - clock_ns: CLOCK_MONOTONIC, as the core's.
//
// Plus the dlopen side of a host: PluginFile (a plugin file and its entry
// point), process_plugin_entry (one file loaded for the whole test binary)
// and LoadedPlugin (a file, its own TestHost, and devices opened on them);
// and the structs a host hands a plugin (make_error, make_duration) and
// the host clock (now_ns).
#pragma once

#include <lapse/lapse.h>
#include <lapse/sdk/error.hpp>

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <ctime>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace lapse::test {

// The host's clock, CLOCK_MONOTONIC in ns (what clock_ns answers, and the
// timeline a window on the host timeline is placed on).
inline int64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The structs a host hands a plugin to fill, with their size set.
inline lapse_error make_error()
{
    lapse_error e{};
    e.struct_size = sizeof e;
    return e;
}
inline lapse_duration make_duration()
{
    lapse_duration d{};
    d.struct_size = sizeof d;
    return d;
}

using ConfigValue = std::variant<int64_t, double, bool, std::string>;
using ConfigTable = std::map<std::string, ConfigValue>;

class TestHost {
public:
    using Value = ConfigValue;
    using Config = ConfigTable;

    struct Line {
        lapse_log_level level;
        std::string text;
    };

    explicit TestHost(Config config = {})
    {
        configs_.push_back(std::move(config));
        host_.struct_size = sizeof(lapse_host);
        host_.abi_major = LAPSE_ABI_MAJOR;
        host_.abi_minor = LAPSE_ABI_MINOR;
        host_.host_name = "lapse TestHost (test double, tests/support)";
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

    const lapse_host* get() const noexcept { return &host_; }
    // To hand a plugin a host it must refuse (another ABI major, ...).
    lapse_host* mutable_host() noexcept { return &host_; }
    // The node handed to open(): this host's current config table.
    const lapse_config* node() const noexcept { return reinterpret_cast<const lapse_config*>(&configs_.back()); }

    // Makes `config` the table node() names and forgets the keys read. The
    // tables before it stay alive, so strings a plugin was handed from them
    // stay valid as long as this host.
    void set_config(Config config)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        configs_.push_back(std::move(config));
        read_.clear();
    }

    std::set<std::string> keys_read() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return read_;
    }

    std::vector<Line> logs() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return logs_;
    }
    bool logged(lapse_log_level level, const std::string& needle) const
    {
        for (const Line& l : logs())
            if (l.level == level && l.text.find(needle) != std::string::npos) return true;
        return false;
    }
    // Each line as "<level>: <text>".
    std::vector<std::string> lines() const
    {
        std::vector<std::string> out;
        for (const Line& l : logs()) out.push_back(std::to_string(static_cast<int>(l.level)) + ": " + l.text);
        return out;
    }
    std::string joined_lines() const
    {
        std::string all;
        for (const auto& l : lines()) all += l + "\n";
        return all;
    }
    int errors() const noexcept { return errors_.load(); }
    int warnings() const noexcept { return warnings_.load(); }

private:
    static TestHost& self(const lapse_host* h) { return *static_cast<TestHost*>(h->host_data); }

    // Remembers that `key` was read; its value, or null when absent (or the
    // node is null). The table is not changed while a plugin reads it.
    static const Value* find(const lapse_host* h, const lapse_config* node, const char* key)
    {
        TestHost& t = self(h);
        {
            std::lock_guard<std::mutex> lock(t.mutex_);
            t.read_.insert(key);
        }
        if (node == nullptr) return nullptr;
        const Config& table = *reinterpret_cast<const Config*>(node);
        auto it = table.find(key);
        return it == table.end() ? nullptr : &it->second;
    }
    static lapse_status wrong_type(lapse_error* error, const char* key, const char* want)
    {
        return sdk::failf(error, LAPSE_ERROR_CONFIG, "test.toml:1:1: %s: expected %s", key, want);
    }
    template <class T>
    static lapse_status get(const lapse_host* h, const lapse_config* node, const char* key, T fallback, T* out,
                            const char* want, lapse_error* error)
    {
        const Value* value = find(h, node, key);
        if (value == nullptr) {
            *out = fallback;
            return LAPSE_OK;
        }
        if (const T* v = std::get_if<T>(value)) {
            *out = *v;
            return LAPSE_OK;
        }
        if constexpr (std::is_same_v<T, double>) {
            // `scale = 2` means 2.0, as in the core.
            if (const int64_t* i = std::get_if<int64_t>(value)) {
                *out = static_cast<double>(*i);
                return LAPSE_OK;
            }
        }
        return wrong_type(error, key, want);
    }

    static void log_fn(const lapse_host* h, lapse_log_level level, const char* message)
    {
        TestHost& t = self(h);
        if (level >= LAPSE_LOG_ERROR) t.errors_.fetch_add(1);
        else if (level == LAPSE_LOG_WARN) t.warnings_.fetch_add(1);
        std::lock_guard<std::mutex> lock(t.mutex_);
        t.logs_.push_back({level, message != nullptr ? message : ""});
    }
    static lapse_status config_string_fn(const lapse_host* h, const lapse_config* node, const char* key,
                                         const char* fallback, const char** out, lapse_error* error)
    {
        const Value* value = find(h, node, key);
        if (value == nullptr) {
            *out = fallback;
            return LAPSE_OK;
        }
        const std::string* v = std::get_if<std::string>(value);
        if (v == nullptr) return wrong_type(error, key, "a string");
        *out = v->c_str();  // lives as long as the host
        return LAPSE_OK;
    }
    static lapse_status config_int_fn(const lapse_host* h, const lapse_config* node, const char* key,
                                      int64_t fallback, int64_t* out, lapse_error* error)
    {
        return get<int64_t>(h, node, key, fallback, out, "an integer", error);
    }
    static lapse_status config_double_fn(const lapse_host* h, const lapse_config* node, const char* key,
                                         double fallback, double* out, lapse_error* error)
    {
        return get<double>(h, node, key, fallback, out, "a number", error);
    }
    static lapse_status config_bool_fn(const lapse_host* h, const lapse_config* node, const char* key, int fallback,
                                       int* out, lapse_error* error)
    {
        bool v = fallback != 0;
        lapse_status s = get<bool>(h, node, key, fallback != 0, &v, "a boolean", error);
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
        return sdk::failf(error, LAPSE_ERROR_CONFIG, "test.toml:1:1: %s: %s", key != nullptr ? key : "(table)",
                          message != nullptr ? message : "invalid value");
    }
    static lapse_status open_backend_fn(const lapse_host*, const lapse_config*, lapse_backend*, lapse_error* error)
    {
        return sdk::fail(error, LAPSE_ERROR_UNSUPPORTED, "TestHost (test double) does not stack backends");
    }
    static void close_backend_fn(const lapse_host*, lapse_backend*) {}
    static int64_t clock_fn(const lapse_host*) { return now_ns(); }

    lapse_host host_{};
    std::list<Config> configs_;  // a list: node() and handed-out strings stay valid
    mutable std::mutex mutex_;
    std::set<std::string> read_;
    std::vector<Line> logs_;
    std::atomic<int> errors_{0};
    std::atomic<int> warnings_{0};
};

// A plugin file opened as a host opens it (dlopen RTLD_NOW | RTLD_LOCAL)
// and its entry point; closed with the object. Throws std::runtime_error.
class PluginFile {
public:
    explicit PluginFile(const std::string& path)
    {
        handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle_ == nullptr) throw std::runtime_error("dlopen " + path + ": " + dlerror());
        entry_ = reinterpret_cast<lapse_plugin_entry_fn>(dlsym(handle_, LAPSE_ENTRY_SYMBOL));
        if (entry_ == nullptr) {
            dlclose(handle_);
            throw std::runtime_error("no " LAPSE_ENTRY_SYMBOL " in " + path);
        }
    }
    ~PluginFile() { dlclose(handle_); }
    PluginFile(const PluginFile&) = delete;
    PluginFile& operator=(const PluginFile&) = delete;

    void* handle() const noexcept { return handle_; }
    lapse_plugin_entry_fn entry() const noexcept { return entry_; }

private:
    void* handle_ = nullptr;
    lapse_plugin_entry_fn entry_ = nullptr;
};

// The entry point of a plugin file loaded once and kept loaded for the
// rest of the process, as the core keeps a plugin loaded while its devices
// live. Throws std::runtime_error (a failed load is tried again next call).
inline lapse_plugin_entry_fn process_plugin_entry(const std::string& path)
{
    static std::mutex mutex;
    // Never closed, never destroyed: a map that outlives static destructors
    // keeps the files reachable (LeakSanitizer sees them held, not leaked).
    static auto& files = *new std::map<std::string, PluginFile*>;
    std::lock_guard<std::mutex> lock(mutex);
    PluginFile*& file = files[path];
    if (file == nullptr) {
        auto loaded = std::make_unique<PluginFile>(path);
        file = loaded.release();
    }
    return file->entry();
}

// A plugin file loaded for one test with a TestHost of its own: the entry
// point runs against that host (of ABI major `abi_major`, to test a
// refusal), and open() opens a device from a flat config through it.
class LoadedPlugin {
public:
    explicit LoadedPlugin(const std::string& path, uint32_t abi_major = LAPSE_ABI_MAJOR) : file_(path)
    {
        host_.mutable_host()->abi_major = abi_major;
        plugin_ = file_.entry()(host_.get());
    }

    // Null when the entry point refused the host.
    const lapse_plugin* plugin() const noexcept { return plugin_; }
    void* library() const noexcept { return file_.handle(); }
    TestHost& host() noexcept { return host_; }
    const TestHost& host() const noexcept { return host_; }

    // Opens a device on `config` (the keys read start afresh); on failure
    // returns the status and leaves the message in last_error().
    lapse_status open(const ConfigTable& config, lapse_device** out)
    {
        host_.set_config(config);
        error_ = make_error();
        *out = nullptr;
        return plugin_->open(host_.get(), host_.node(), out, &error_);
    }
    const lapse_error& last_error() const noexcept { return error_; }

private:
    TestHost host_;    // declared first: outlives the file, which may log while it unloads
    PluginFile file_;
    const lapse_plugin* plugin_ = nullptr;
    lapse_error error_{};
};

}  // namespace lapse::test
