// File and negotiation checks: the plugin's exports, how long loading takes,
// its descriptor, and how its entry point answers hosts that are not
// today's (newer minor, older minor, a services struct shorter than today's,
// another major). These call the entry point directly with a crafted
// lapse_host, so they dlopen the file themselves (in the check's child).
#include "checks.hpp"

#include <lapse/core.hpp>
#include <lapse/lapse.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <ctime>
#include <regex>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

namespace lapse::cli {
namespace {

// The part of the descriptor an ABI 1.0 host reads.
constexpr std::size_t descriptor_v1_0_size = offsetof(lapse_plugin, get_extension) + sizeof(void*);
constexpr uint64_t known_capabilities = (LAPSE_CAP_HOST_TIMELINE << 1) - 1;

// What the crafted host's log received; one process per check, so a global
// is the simplest honest store.
std::vector<std::string>& log_lines()
{
    static std::vector<std::string> lines;
    return lines;
}

void host_log(const lapse_host*, lapse_log_level level, const char* message)
{
    if (level >= LAPSE_LOG_WARN) log_lines().push_back(message != nullptr ? message : "(null)");
}
lapse_status host_config_string(const lapse_host*, const lapse_config*, const char*, const char* fallback,
                                const char** out, lapse_error*)
{
    if (out != nullptr) *out = fallback;
    return LAPSE_OK;
}
lapse_status host_config_int(const lapse_host*, const lapse_config*, const char*, int64_t fallback, int64_t* out,
                             lapse_error*)
{
    if (out != nullptr) *out = fallback;
    return LAPSE_OK;
}
lapse_status host_config_double(const lapse_host*, const lapse_config*, const char*, double fallback, double* out,
                                lapse_error*)
{
    if (out != nullptr) *out = fallback;
    return LAPSE_OK;
}
lapse_status host_config_bool(const lapse_host*, const lapse_config*, const char*, int fallback, int* out,
                              lapse_error*)
{
    if (out != nullptr) *out = fallback;
    return LAPSE_OK;
}
lapse_status host_config_child(const lapse_host*, const lapse_config*, const char*, const lapse_config** out,
                               lapse_error*)
{
    if (out != nullptr) *out = nullptr;
    return LAPSE_OK;
}
lapse_status host_config_error(const lapse_host*, const lapse_config*, const char*, const char*, lapse_error*)
{
    return LAPSE_ERROR_CONFIG;
}
lapse_status host_open_backend(const lapse_host*, const lapse_config*, lapse_backend*, lapse_error*)
{
    return LAPSE_ERROR_UNSUPPORTED;
}
void host_close_backend(const lapse_host*, lapse_backend*) {}
int64_t host_clock(const lapse_host*)
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

lapse_host full_host()
{
    lapse_host h{};
    h.struct_size = sizeof(lapse_host);
    h.abi_major = LAPSE_ABI_MAJOR;
    h.abi_minor = LAPSE_ABI_MINOR;
    h.host_name = "lapse validate (crafted host)";
    h.log = &host_log;
    h.config_string = &host_config_string;
    h.config_int = &host_config_int;
    h.config_double = &host_config_double;
    h.config_bool = &host_config_bool;
    h.config_child = &host_config_child;
    h.config_error = &host_config_error;
    h.open_backend = &host_open_backend;
    h.close_backend = &host_close_backend;
    h.clock_ns = &host_clock;
    return h;
}

lapse_plugin_entry_fn open_entry(const std::string& file)
{
    void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* why = dlerror();
        fail(std::string("dlopen failed: ") + (why != nullptr ? why : "unknown"));
    }
    void* sym = dlsym(handle, LAPSE_ENTRY_SYMBOL);
    if (sym == nullptr) fail("no symbol " LAPSE_ENTRY_SYMBOL);
    return reinterpret_cast<lapse_plugin_entry_fn>(sym);
}

std::string said()
{
    std::string s;
    for (const auto& l : log_lines()) s += (s.empty() ? "" : " | ") + l;
    return s.empty() ? "(nothing logged)" : s;
}

// A host whose struct ends exactly at a PROT_NONE page: a plugin that reads
// a field past struct_size faults instead of reading garbage quietly.
const lapse_host* guarded_host(std::size_t struct_size)
{
    const long page = sysconf(_SC_PAGESIZE);
    void* mem = mmap(nullptr, static_cast<std::size_t>(page) * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (mem == MAP_FAILED) fail("mmap failed");
    char* guard = static_cast<char*>(mem) + page;
    if (mprotect(guard, static_cast<std::size_t>(page), PROT_NONE) != 0) fail("mprotect failed");
    lapse_host full = full_host();
    full.struct_size = static_cast<uint32_t>(struct_size);
    char* at = guard - struct_size;
    std::memcpy(at, &full, struct_size);
    return reinterpret_cast<const lapse_host*>(at);
}

void check_exports(const CheckContext& ctx, std::string& note)
{
    std::vector<ExportedSymbol> symbols;
    try {
        symbols = exported_symbols(ctx.plugin_file);
    } catch (const std::exception& e) {
        fail(e.what());
    }
    bool entry = false;
    std::string extra;
    for (const auto& s : symbols) {
        if (s.name == LAPSE_ENTRY_SYMBOL) {
            entry = true;
            require(s.function, LAPSE_ENTRY_SYMBOL " is exported but is not a function");
        } else {
            extra += (extra.empty() ? "" : ", ") + s.name;
        }
    }
    require(entry, "does not export " LAPSE_ENTRY_SYMBOL);
    require(extra.empty(), "exports more than " LAPSE_ENTRY_SYMBOL ": " + extra +
                               " (build with hidden visibility and the SDK's version script)");
    note = "exports only " LAPSE_ENTRY_SYMBOL;
}

void check_load_time(const CheckContext& ctx, std::string& note)
{
    // Loading runs the entry point in every host: it must not do the work
    // of opening a device (enumerating GPUs, starting threads).
    const auto t0 = std::chrono::steady_clock::now();
    Runtime runtime;
    PluginLibrary lib;
    try {
        lib = runtime.load_plugin(ctx.plugin_file);
    } catch (const std::exception& e) {
        fail(std::string("the host refuses it: ") + e.what());
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    note = "loaded and negotiated in " + std::to_string(ms).substr(0, 6) + " ms";
    require(ms < 2000.0, "loading took " + std::to_string(ms) + " ms (budget 2000 ms): the entry point must only "
                                                             "return the descriptor; do device work in open");
}

void check_descriptor(const CheckContext& ctx, std::string& note)
{
    lapse_host host = full_host();
    const lapse_plugin* d = open_entry(ctx.plugin_file)(&host);
    require(d != nullptr, "the entry refused today's host: " + said());
    require(d->struct_size >= descriptor_v1_0_size,
            "descriptor is " + std::to_string(d->struct_size) + " bytes; ABI 1.0 needs " +
                std::to_string(descriptor_v1_0_size));
    require(d->abi_major == LAPSE_ABI_MAJOR, "descriptor says ABI major " + std::to_string(d->abi_major));
    require(d->reserved == 0, "descriptor.reserved is not 0");
    require(d->name != nullptr && d->name[0] != '\0', "descriptor has no name");
    const std::string name = d->name;
    require(std::regex_match(name, std::regex("[a-z0-9][a-z0-9_-]*")),
            "name \"" + name + "\" is not short lowercase ([a-z0-9_-]): configs and file names use it");
    const std::string stem = std::filesystem::path(ctx.plugin_file).stem().string();
    if (stem.rfind("lapse_", 0) == 0)
        require(stem.substr(6) == name, "file " + stem + ".so carries name \"" + name + "\": `plugin = \"" +
                                            stem.substr(6) + "\"` would find a plugin that calls itself otherwise");
    require(d->version != nullptr && d->version[0] != '\0', "descriptor has no version");
    require(d->description != nullptr && d->description[0] != '\0', "descriptor has no description");
    require(std::strchr(d->description, '\n') == nullptr, "description is more than one line");
    require((d->capabilities & ~known_capabilities) == 0, "capabilities carry unknown bits");
    // SINGLE_WINDOW beside NESTED is fine here: a wrapper's descriptor
    // lists what it may pass through from the backend below; the device's
    // own capabilities must not contradict (device.open_close checks).
    std::string missing;
    auto need = [&](const void* fn, const char* what) {
        if (fn == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(what);
    };
    need(reinterpret_cast<const void*>(d->open), "open");
    need(reinterpret_cast<const void*>(d->close), "close");
    need(reinterpret_cast<const void*>(d->describe), "describe");
    need(reinterpret_cast<const void*>(d->sync), "sync");
    need(reinterpret_cast<const void*>(d->submit), "submit");
    need(reinterpret_cast<const void*>(d->profile_start), "profile_start");
    need(reinterpret_cast<const void*>(d->profile_end), "profile_end");
    need(reinterpret_cast<const void*>(d->profile_abandon), "profile_abandon");
    need(reinterpret_cast<const void*>(d->resolve), "resolve");
    require(missing.empty(), "null function pointers: " + missing);
    note = name + " " + d->version + ", ABI " + std::to_string(d->abi_major) + "." + std::to_string(d->abi_minor) +
           ", " + capability_names(d->capabilities);
}

void check_minor_higher(const CheckContext& ctx, std::string& note)
{
    // A newer host: higher minor and a longer services struct (fields
    // appended). Minor versions are append-only, so this must be accepted.
    struct Longer {
        lapse_host host;
        void* appended[8];
    } longer{};
    longer.host = full_host();
    longer.host.abi_minor = LAPSE_ABI_MINOR + 1;
    longer.host.struct_size = sizeof(Longer);
    const lapse_plugin* d = open_entry(ctx.plugin_file)(&longer.host);
    require(d != nullptr, "refused a host of ABI " + std::to_string(LAPSE_ABI_MAJOR) + "." +
                              std::to_string(LAPSE_ABI_MINOR + 1) +
                              ": minor versions are append-only and must be accepted (" + said() + ")");
    require(d->abi_major == LAPSE_ABI_MAJOR, "answered with major " + std::to_string(d->abi_major));
    note = "accepted host ABI " + std::to_string(LAPSE_ABI_MAJOR) + "." + std::to_string(LAPSE_ABI_MINOR + 1);
}

void check_minor_lower(const CheckContext& ctx, std::string& note)
{
    lapse_host host = full_host();
    lapse_plugin_entry_fn entry = open_entry(ctx.plugin_file);
    const lapse_plugin* d = entry(&host);
    require(d != nullptr, "refused today's host: " + said());
    if (d->abi_minor == 0)
        skip("not applicable: the plugin was built for ABI " + std::to_string(d->abi_major) +
             ".0, and no host speaks a lower minor");
    // An older host lacks what later minors appended: the plugin must cope
    // (not call what is absent) or refuse with a reason. Tried in a fresh
    // load where the loader allows one.
    lapse_host older = full_host();
    older.abi_minor = d->abi_minor - 1;
    log_lines().clear();
    const lapse_plugin* again = entry(&older);
    if (again == nullptr) {
        require(!log_lines().empty(), "refused an older host without saying why through host->log");
        note = "refused ABI " + std::to_string(older.abi_major) + "." + std::to_string(older.abi_minor) +
               " with a reason: " + said();
        return;
    }
    require(again->abi_major == LAPSE_ABI_MAJOR, "answered with major " + std::to_string(again->abi_major));
    note = "accepted an older minor";
}

void check_short_host(const CheckContext& ctx, std::string& note, std::size_t size, const char* what)
{
    // The bytes after struct_size are an unmapped page: reading past the end
    // crashes this check instead of passing by luck.
    const lapse_host* host = guarded_host(size);
    const lapse_plugin* d = open_entry(ctx.plugin_file)(host);
    note = std::string(d == nullptr ? "refused" : "accepted") + " a host services struct of " + std::to_string(size) +
           " bytes (" + what + ") without reading past it";
}

void check_short_host_header(const CheckContext& ctx, std::string& note)
{
    check_short_host(ctx, note, offsetof(lapse_host, log), "version fields only");
}

void check_short_host_no_stacking(const CheckContext& ctx, std::string& note)
{
    check_short_host(ctx, note, offsetof(lapse_host, open_backend), "no stacking or clock services");
}

void check_wrong_major(const CheckContext& ctx, std::string& note)
{
    lapse_plugin_entry_fn entry = open_entry(ctx.plugin_file);
    lapse_host host = full_host();
    host.abi_major = LAPSE_ABI_MAJOR + 1;
    host.abi_minor = 0;
    const lapse_plugin* d = entry(&host);
    require(d == nullptr, "accepted a host of ABI major " + std::to_string(host.abi_major) +
                              ": the major must match (refuse, and say why through host->log)");
    require(!log_lines().empty(), "refused a host of another major without saying why through host->log");
    note = "refused ABI " + std::to_string(host.abi_major) + ".0: " + said();
}

}  // namespace

void append_negotiation_checks(std::vector<Check>& out)
{
    out.push_back({"exports.only_entry", "the file exports lapse_plugin_entry_v1 and nothing else", &check_exports});
    out.push_back({"load.time", "the host loads and negotiates it, within 2 s", &check_load_time});
    out.push_back({"descriptor.sanity", "name, version, description, capabilities and functions are sound",
                   &check_descriptor});
    out.push_back({"negotiation.host_minor_higher", "a newer host (higher minor, longer struct) is accepted",
                   &check_minor_higher});
    out.push_back({"negotiation.host_minor_lower", "an older host (lower minor) is served or refused with a reason",
                   &check_minor_lower});
    out.push_back({"negotiation.short_host_header", "a host struct holding only version fields is not read past",
                   &check_short_host_header});
    out.push_back({"negotiation.short_host_no_stacking",
                   "a host struct ending before open_backend is not read past", &check_short_host_no_stacking});
    out.push_back({"negotiation.wrong_major", "a host of another major is refused, with a log line",
                   &check_wrong_major});
}

}  // namespace lapse::cli
