// Loading plugin files with Boost.DLL, negotiating the ABI and checking the
// descriptor before anything else in the file is called.
#define BOOST_DLL_USE_STD_FS 1
#include "loaded_library.hpp"

#include "logging.hpp"
#include "plugin_search.hpp"
#include "plugin_text.hpp"

#include <lapse/core/error.hpp>
#include <lapse/core/plugin.hpp>

#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace lapse::detail {

struct LoadedLibrary::Handle {
    boost::dll::shared_library library;
};

namespace {

std::mutex registry_mutex;
// The file's identity (device, inode) -> the loaded file, while anything
// holds it. Not the path: another file renamed onto the path is other code.
using FileId = std::pair<dev_t, ino_t>;
std::map<FileId, std::weak_ptr<LoadedLibrary>>& registry()
{
    static auto* files = new std::map<FileId, std::weak_ptr<LoadedLibrary>>();  // never destroyed: used at exit
    return *files;
}

// An open descriptor, closed on every path out.
struct OpenFile {
    int fd = -1;
    ~OpenFile()
    {
        if (fd >= 0) ::close(fd);
    }
};

// The part of lapse_plugin this host reads: all of ABI 1.0.
constexpr std::size_t required_descriptor_size = offsetof(lapse_plugin, get_extension) + sizeof(void*);
constexpr std::size_t descriptor_header_size = offsetof(lapse_plugin, reserved);

[[noreturn]] void refuse(const std::filesystem::path& file, const std::string& cause)
{
    throw Error(LAPSE_ERROR_LOAD, file.string() + ": " + cause);
}

}  // namespace

LoadedLibrary::LoadedLibrary(std::filesystem::path path, std::shared_ptr<spdlog::logger> logger)
    : path_(std::move(path)), logger_(std::move(logger))
{
    // Until the descriptor names the plugin, its log lines carry the file's
    // name: lapse_cpu.so -> "cpu".
    name_ = path_.stem().string();
    if (name_.rfind("lapse_", 0) == 0) name_ = name_.substr(6);
    host_.struct_size = sizeof(lapse_host);
    host_.abi_major = LAPSE_ABI_MAJOR;
    host_.abi_minor = LAPSE_ABI_MINOR;
    host_.reserved = 0;
    host_.host_name = "lapse-core 0.1.0";
    host_.host_data = this;
    fill_host_services(host_);
}

LoadedLibrary::~LoadedLibrary()
{
    // Every device from this file is closed by now (each held a reference);
    // Boost.DLL's destructor unloads the file.
    handle_.reset();
    if (fd_ < 0) return;
    // An object the loader could not unload (RTLD_NODELETE, a unique
    // symbol) keeps its name /proc/self/fd/N: the number must then never be
    // reused, or opening another file under it would return this code.
    const std::string name = "/proc/self/fd/" + std::to_string(fd_);
    if (void* still = ::dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
        ::dlclose(still);
        return;  // the descriptor stays open for the life of the process
    }
    ::close(fd_);
}

std::shared_ptr<LoadedLibrary> LoadedLibrary::load(const std::filesystem::path& file,
                                                   std::shared_ptr<spdlog::logger> logger, const PinnedHash* pin)
{
    std::error_code ec;
    std::filesystem::path canonical = std::filesystem::canonical(file, ec);
    if (ec) refuse(file, "cannot open: " + ec.message());

    OpenFile opened;
    opened.fd = ::open(canonical.c_str(), O_RDONLY | O_CLOEXEC);
    if (opened.fd < 0) refuse(canonical, std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(opened.fd, &st) != 0) refuse(canonical, std::string("cannot stat: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) refuse(canonical, "not a regular file");
    if (pin != nullptr) {
        std::string actual = sha256_of_descriptor(opened.fd, file);
        if (actual != pin->sha256)
            throw Error(LAPSE_ERROR_LOAD, pin->where + ": " + file.string() + " has SHA-256 " + actual +
                                              ", the config pins " + pin->sha256 + "; refusing to load it");
    }

    // Held across the load so that two threads loading one file load it once.
    std::lock_guard lock(registry_mutex);
    auto& files = registry();
    const FileId id{st.st_dev, st.st_ino};
    auto it = files.find(id);
    if (it != files.end()) {
        if (auto existing = it->second.lock()) return existing;
    }
    std::shared_ptr<LoadedLibrary> lib(new LoadedLibrary(canonical, std::move(logger)));
    lib->fd_ = opened.fd;  // the library owns it from here
    opened.fd = -1;
    lib->load_and_negotiate(lib->fd_);
    files[id] = lib;
    // Forget expired entries so the map does not grow with every reload.
    for (auto i = files.begin(); i != files.end();) i = i->second.expired() ? files.erase(i) : std::next(i);
    return lib;
}

void LoadedLibrary::log(lapse_log_level level, const char* message) noexcept
{
    const char* text = message != nullptr ? message : "(null message)";
    try {
        std::string who;
        {
            std::lock_guard lock(entry_mutex_);
            if (in_entry_ && level >= LAPSE_LOG_WARN) entry_last_error_ = text;
            who = name_;  // set once the descriptor is known; read under the lock
        }
        log_line(logger_.get(), level, who, text);
    } catch (...) {
        // Logging must never fail a plugin.
    }
}

namespace {

const char* machine_name(uint16_t machine) noexcept
{
    switch (machine) {
    case EM_X86_64: return "x86-64";
    case EM_386: return "i386";
    case EM_AARCH64: return "aarch64";
    case EM_ARM: return "arm";
    case EM_RISCV: return "riscv";
    case EM_PPC64: return "ppc64";
    case EM_S390: return "s390x";
    default: return nullptr;
    }
}

// glibc refuses an ELF file for another machine with "cannot open shared
// object file: No such file or directory", which sends a user looking for a
// missing file. Read e_machine ourselves so the refusal names the cause.
std::string foreign_machine(const std::filesystem::path& file)
{
    Elf64_Ehdr header{};
    std::ifstream in(file, std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(&header), sizeof header)) return {};
    if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64) return {};
#if defined(__x86_64__)
    constexpr uint16_t host = EM_X86_64;
#elif defined(__aarch64__)
    constexpr uint16_t host = EM_AARCH64;
#else
    return {};  // the cause stays glibc's
#endif
    if (header.e_machine == host) return {};
    const char* theirs = machine_name(header.e_machine);
    return std::string("built for ") + (theirs != nullptr ? theirs : "ELF machine " + std::to_string(header.e_machine)) +
           ", and this host is " + machine_name(host);
}

}  // namespace

void LoadedLibrary::load_and_negotiate(int fd)
{
    handle_ = std::make_unique<Handle>();
    std::error_code ec;  // BOOST_DLL_USE_STD_FS: Boost.DLL reports through std::error_code
    (void)dlerror();
    // The descriptor that was hashed and checked, not the name: the loader
    // opens /proc/self/fd/N, which is that very file whatever the name
    // points at by now. (Boost.DLL passes a path with a folder to dlopen as is.)
    const std::filesystem::path by_descriptor = "/proc/self/fd/" + std::to_string(fd);
    handle_->library.load(by_descriptor, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
    if (ec || !handle_->library.is_loaded()) {
        // Boost.DLL keeps only a generic code; dlerror still holds the real cause.
        const char* dl_why = dlerror();
        // dlerror names /proc/self/fd/N; the user knows the file by its name.
        std::string why_text = dl_why != nullptr ? dl_why : "";
        for (std::size_t at; (at = why_text.find(by_descriptor.string())) != std::string::npos;)
            why_text.replace(at, by_descriptor.string().size(), path_.string());
        const char* why = dl_why != nullptr ? why_text.c_str() : nullptr;
        const std::string foreign = foreign_machine(by_descriptor);
        if (!foreign.empty()) refuse(path_, "not a loadable shared object: " + foreign);
        refuse(path_, std::string("not a loadable shared object: ") + (why != nullptr ? why : ec.message()));
    }
    if (!handle_->library.has(LAPSE_ENTRY_SYMBOL))
        refuse(path_, "no symbol " LAPSE_ENTRY_SYMBOL " (not a lapse plugin?)");
    auto& entry = handle_->library.get<const lapse_plugin*(const lapse_host*)>(LAPSE_ENTRY_SYMBOL);

    const lapse_plugin* d = nullptr;
    {
        std::lock_guard lock(entry_mutex_);
        in_entry_ = true;
    }
    std::string thrown;
    try {
        d = entry(&host_);
    } catch (const std::exception& e) {
        thrown = std::string("its entry threw a C++ exception: ") + e.what();
    } catch (...) {
        thrown = "its entry threw a non-standard C++ exception";
    }
    std::string said;
    {
        std::lock_guard lock(entry_mutex_);
        in_entry_ = false;
        said = std::move(entry_last_error_);
    }
    if (!thrown.empty()) refuse(path_, thrown + " (exceptions must not cross the C ABI)");
    if (d == nullptr)
        refuse(path_, std::string(LAPSE_ENTRY_SYMBOL " returned no descriptor") +
                          (said.empty() ? " (the plugin did not say why)" : " (it said: " + said + ")"));

    if (d->struct_size < descriptor_header_size)
        refuse(path_, "descriptor is " + std::to_string(d->struct_size) + " bytes, too short to carry an ABI version");
    if (d->abi_major != LAPSE_ABI_MAJOR)
        refuse(path_, "built for lapse ABI " + std::to_string(d->abi_major) + "." + std::to_string(d->abi_minor) +
                          ", this host speaks " + std::to_string(LAPSE_ABI_MAJOR) + "." +
                          std::to_string(LAPSE_ABI_MINOR));
    if (d->struct_size < required_descriptor_size)
        refuse(path_, "descriptor is " + std::to_string(d->struct_size) + " bytes, lapse ABI " +
                          std::to_string(LAPSE_ABI_MAJOR) + "." + std::to_string(LAPSE_ABI_MINOR) +
                          " needs at least " + std::to_string(required_descriptor_size));
    if (d->name == nullptr || d->name[0] == '\0') refuse(path_, "descriptor has no name");
    if (!terminated_within(d->name, max_plugin_name))
        refuse(path_, "descriptor name is not NUL-terminated within " + std::to_string(max_plugin_name) + " bytes");

    std::vector<std::string> missing;
    if (d->open == nullptr) missing.push_back("open");
    if (d->close == nullptr) missing.push_back("close");
    if (d->describe == nullptr) missing.push_back("describe");
    if (d->sync == nullptr) missing.push_back("sync");
    if (d->submit == nullptr) missing.push_back("submit");
    if (d->profile_start == nullptr) missing.push_back("profile_start");
    if (d->profile_end == nullptr) missing.push_back("profile_end");
    if (d->profile_abandon == nullptr) missing.push_back("profile_abandon");
    if (d->resolve == nullptr) missing.push_back("resolve");
    // get_extension may be null: a plugin without extensions.
    if (!missing.empty()) {
        std::string list;
        for (const auto& m : missing) {
            if (!list.empty()) list += ", ";
            list += m;
        }
        refuse(path_, "descriptor lacks required functions: " + list);
    }

    descriptor_ = d;
    version_ = std::string(bounded_text(d->version, max_plugin_version));
    description_ = std::string(bounded_text(d->description, max_plugin_description));
    {
        std::lock_guard lock(entry_mutex_);
        name_ = std::string(bounded_text(d->name, max_plugin_name));
    }

    // A plugin should export its entry and nothing else (hidden visibility,
    // version script): anything more can clash with the host's symbols.
    try {
        std::string extra;
        for (const auto& s : exported_symbols(by_descriptor)) {
            if (s.name == LAPSE_ENTRY_SYMBOL) continue;
            if (!extra.empty()) extra += ", ";
            extra += s.name;
        }
        if (!extra.empty())
            log_line(logger_.get(), LAPSE_LOG_WARN, name_,
                     path_.string() + " exports more than " LAPSE_ENTRY_SYMBOL ": " + extra);
    } catch (const Error&) {
        // Loaded fine but not readable as ELF here: nothing to warn about.
    }
}

}  // namespace lapse::detail

namespace lapse {

std::filesystem::path default_plugin_dir()
{
    // this_line_location is the core library itself (dladdr on this code).
    std::error_code ec;
    std::filesystem::path self = boost::dll::this_line_location();
    std::filesystem::path resolved = std::filesystem::weakly_canonical(self, ec);
    return (ec ? self.lexically_normal() : resolved).parent_path() / "lapse";
}

}  // namespace lapse
