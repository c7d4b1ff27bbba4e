#include "plugin_search.hpp"

#include "config_tree.hpp"
#include "logging.hpp"
#include "runtime_state.hpp"

#include <lapse/core/error.hpp>
#include <lapse/core/plugin.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

namespace lapse::detail {

namespace {

void add_unique(std::vector<std::filesystem::path>& list, const std::filesystem::path& p)
{
    if (std::find(list.begin(), list.end(), p) == list.end()) list.push_back(p);
}

std::string join(const std::vector<std::filesystem::path>& list)
{
    std::string out;
    for (const auto& p : list) {
        if (!out.empty()) out += ':';
        out += p.string();
    }
    return out.empty() ? "(empty)" : out;
}

}  // namespace

std::vector<std::filesystem::path> build_search_path(const RuntimeState& runtime, const SearchSettings* config)
{
    std::vector<std::filesystem::path> out;
    if (const char* env = std::getenv("LAPSE_PLUGIN_PATH")) {
        std::string_view rest(env);
        while (!rest.empty()) {
            auto colon = rest.find(':');
            std::string_view item = rest.substr(0, colon);
            rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
            if (item.empty()) continue;
            std::filesystem::path p(item);
            if (p.is_relative()) {
                // A relative entry would depend on the working directory.
                log_line(runtime.logger.get(), LAPSE_LOG_WARN, "lapse",
                         "LAPSE_PLUGIN_PATH: ignoring relative entry '" + p.string() + "'");
                continue;
            }
            add_unique(out, p.lexically_normal());
        }
    }
    for (const auto& p : runtime.extra_paths) add_unique(out, p);
    if (config != nullptr)
        for (const auto& p : config->paths) add_unique(out, p);
    add_unique(out, default_plugin_dir());
    return out;
}

std::filesystem::path resolve_plugin(std::string_view value, const std::filesystem::path& base_dir,
                                     const std::vector<std::filesystem::path>& search, const std::string& where)
{
    std::error_code ec;
    bool is_path = value.find('/') != std::string_view::npos ||
                   (value.size() >= 3 && value.substr(value.size() - 3) == ".so");
    if (is_path) {
        std::filesystem::path p(value);
        if (p.is_relative()) {
            if (base_dir.empty())
                throw Error(LAPSE_ERROR_LOAD, where + ": relative plugin path '" + p.string() +
                                                  "' in a config with no base folder");
            p = base_dir / p;
        }
        p = p.lexically_normal();
        if (!std::filesystem::is_regular_file(p, ec))
            throw Error(LAPSE_ERROR_LOAD, where + ": plugin file '" + p.string() + "' does not exist");
        return p;
    }
    std::string file = "lapse_" + std::string(value) + ".so";
    for (const auto& dir : search) {
        std::filesystem::path p = dir / file;
        if (std::filesystem::is_regular_file(p, ec)) return p;
    }
    throw Error(LAPSE_ERROR_LOAD, where + ": no plugin '" + std::string(value) + "' (" + file +
                                      ") in the search path " + join(search));
}

namespace {

// Why a path is not safe to load code through, or "" when it is. Walks the
// path from the root one component at a time, the way the kernel resolves
// it: every folder passed through must not be world-writable (a sticky one
// such as /tmp may be, when the entry taken from it belongs to this user or
// root, since then nobody else can rename it), and every symlink met is
// followed from the folder it sits in, so each link of a chain and each
// folder its targets pass through is checked too. A component that does not
// exist ends the walk: everything above it was checked, and nobody else can
// create it. The last component may be a file (the plugin) or a folder (a
// RUNPATH entry); a file must not be world-writable itself.
class PathWalk {
public:
    std::string check(const std::filesystem::path& start)
    {
        std::error_code ec;
        std::filesystem::path absolute = start.is_absolute() ? start : std::filesystem::absolute(start, ec);
        std::vector<std::string> rest;
        for (const auto& part : absolute.relative_path()) rest.push_back(part.string());
        std::reverse(rest.begin(), rest.end());  // a stack: next component at the back
        std::filesystem::path here = "/";
        std::string why = folder_problem(here, nullptr);
        if (!why.empty()) return why;
        while (!rest.empty()) {
            std::string part = rest.back();
            rest.pop_back();
            if (part.empty() || part == ".") continue;
            if (part == "..") {
                here = here.has_relative_path() ? here.parent_path() : here;
                continue;
            }
            std::filesystem::path next = here / part;
            struct stat st {};
            if (::lstat(next.c_str(), &st) != 0) return {};  // nothing there to load: the caller says so
            if (!entry_safe_in(here, st)) return "the folder " + here.string() + " is world-writable and " +
                                                  next.string() + " belongs to another user";
            if (S_ISLNK(st.st_mode)) {
                if (++links_ > 40) return "too many levels of symbolic links at " + next.string();
                std::error_code rec;
                std::filesystem::path target = std::filesystem::read_symlink(next, rec);
                if (rec) return "cannot read the symlink " + next.string() + ": " + rec.message();
                via_ = next;
                std::vector<std::string> parts;
                for (const auto& t : target.relative_path()) parts.push_back(t.string());
                for (auto i = parts.rbegin(); i != parts.rend(); ++i) rest.push_back(*i);
                if (target.is_absolute()) {
                    here = "/";
                    std::string w = folder_problem(here, nullptr);
                    if (!w.empty()) return w;
                }
                continue;
            }
            if (S_ISDIR(st.st_mode)) {
                std::string w = folder_problem(next, &st);
                if (!w.empty()) return w;
                here = next;
                continue;
            }
            if (!rest.empty()) return {};  // a file in the middle: resolution fails, nothing is loaded
            if ((st.st_mode & S_IWOTH) != 0) return "the file " + next.string() + " is world-writable";
            here = next;
        }
        return {};
    }

    // The last symlink followed, for the message ("" when none).
    const std::filesystem::path& via() const noexcept { return via_; }

private:
    static bool sticky_world_writable(const struct stat& st)
    {
        return (st.st_mode & S_IWOTH) != 0 && (st.st_mode & S_ISVTX) != 0;
    }

    std::string folder_problem(const std::filesystem::path& folder, const struct stat* known)
    {
        struct stat st {};
        if (known != nullptr)
            st = *known;
        else if (::stat(folder.c_str(), &st) != 0)
            return {};
        if ((st.st_mode & S_IWOTH) != 0 && (st.st_mode & S_ISVTX) == 0)
            return "the folder " + folder.string() + " is world-writable";
        return {};
    }

    // In a sticky world-writable folder, only an entry's owner (or root)
    // can rename or remove it.
    static bool entry_safe_in(const std::filesystem::path& folder, const struct stat& entry)
    {
        struct stat st {};
        if (::stat(folder.c_str(), &st) != 0 || !sticky_world_writable(st)) return true;
        return entry.st_uid == 0 || entry.st_uid == ::geteuid();
    }

    int links_ = 0;
    std::filesystem::path via_;
};

[[noreturn]] void refuse_untrusted(const std::filesystem::path& file, const std::string& why, const std::string& where)
{
    throw Error(LAPSE_ERROR_LOAD, where + ": refusing " + file.string() + ": " + why +
                                      " (anyone on this machine could replace the code lapse would run); "
                                      "fix the permissions or set allow_insecure = true");
}

// $ORIGIN and ${ORIGIN} in a RUNPATH entry mean the folder of the file.
std::string expand_origin(std::string entry, const std::string& origin)
{
    for (const char* token : {"${ORIGIN}", "$ORIGIN"}) {
        std::size_t at;
        const std::size_t length = std::strlen(token);
        while ((at = entry.find(token)) != std::string::npos) entry.replace(at, length, origin);
    }
    return entry;
}

}  // namespace

void check_file_trust(const std::filesystem::path& file, bool allow_insecure, const std::string& where)
{
    if (allow_insecure) return;
    PathWalk walk;
    std::string why = walk.check(file);
    if (!why.empty()) {
        if (!walk.via().empty()) why += " (through the symlink " + walk.via().string() + ")";
        refuse_untrusted(file, why, where);
    }
    // The loader looks for the plugin's own dependencies in its RUNPATH (or
    // RPATH) before the system's folders: a library planted there runs as
    // the plugin.
    std::error_code ec;
    std::filesystem::path real = std::filesystem::canonical(file, ec);
    if (ec) return;
    std::vector<std::string> entries;
    try {
        entries = library_search_paths(real);
    } catch (const Error&) {
        return;  // not readable as ELF: the loader will say why
    }
    const std::string origin = real.parent_path().string();
    for (const auto& raw : entries) {
        if (raw.empty()) continue;
        std::string folder = expand_origin(raw, origin);
        PathWalk dependency;
        std::string problem = dependency.check(folder);
        if (!problem.empty())
            refuse_untrusted(file, "its dependencies are searched in " + folder + " (RUNPATH " + raw + "), and " +
                                       problem,
                             where);
    }
}

PinnedHash parse_sha256_pin(std::string_view pinned, const std::string& where)
{
    std::string expected(pinned);
    std::transform(expected.begin(), expected.end(), expected.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    bool hex = expected.size() == 64 && std::all_of(expected.begin(), expected.end(), [](unsigned char c) {
                   return std::isxdigit(c) != 0;
               });
    if (!hex)
        throw Error(LAPSE_ERROR_CONFIG, where + ": expected 64 hex digits, got '" + std::string(pinned) + "'");
    return PinnedHash{expected, where};
}

}  // namespace lapse::detail
