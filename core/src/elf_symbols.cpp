// Reading the exported symbols of a shared object from its ELF .dynsym, and
// the folders its RUNPATH / RPATH send the loader to, without loading it
// (`lapse info`, the warning for plugins that export more than their entry,
// and the trust check of the folders a plugin's dependencies come from). Every offset read from the file is bounds-checked:
// the file may be anything.
#include <lapse/core/error.hpp>
#include <lapse/core/plugin.hpp>

#include "plugin_search.hpp"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace lapse {

namespace {

[[noreturn]] void not_elf(const std::filesystem::path& file, const std::string& cause)
{
    throw Error(LAPSE_ERROR_LOAD, file.string() + ": " + cause);
}

template <class T>
bool read_at(const std::vector<unsigned char>& bytes, uint64_t offset, T& out)
{
    if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
    std::memcpy(&out, bytes.data() + offset, sizeof(T));
    return true;
}

template <class Ehdr, class Shdr, class Sym, unsigned char (*Bind)(unsigned char),
          unsigned char (*Type)(unsigned char)>
std::vector<ExportedSymbol> read_dynsym(const std::filesystem::path& file, const std::vector<unsigned char>& bytes)
{
    Ehdr eh;
    if (!read_at(bytes, 0, eh)) not_elf(file, "truncated ELF header");
    if (eh.e_shentsize != sizeof(Shdr)) not_elf(file, "unexpected ELF section header size");
    std::vector<ExportedSymbol> out;
    for (uint64_t i = 0; i < eh.e_shnum; ++i) {
        Shdr sh;
        if (!read_at(bytes, eh.e_shoff + i * sizeof(Shdr), sh)) not_elf(file, "truncated ELF section table");
        if (sh.sh_type != SHT_DYNSYM) continue;
        Shdr strtab;
        if (sh.sh_link >= eh.e_shnum || !read_at(bytes, eh.e_shoff + uint64_t(sh.sh_link) * sizeof(Shdr), strtab))
            not_elf(file, "bad .dynsym string table link");
        if (sh.sh_entsize != sizeof(Sym)) not_elf(file, "unexpected .dynsym entry size");
        uint64_t count = sh.sh_size / sizeof(Sym);
        for (uint64_t k = 1; k < count; ++k) {  // entry 0 is the null symbol
            Sym sym;
            if (!read_at(bytes, sh.sh_offset + k * sizeof(Sym), sym)) not_elf(file, "truncated .dynsym");
            unsigned char bind = Bind(sym.st_info);
            unsigned char vis = sym.st_other & 0x3;
            if (sym.st_shndx == SHN_UNDEF) continue;  // an import, not an export
            // A version node ("LAPSE_1" from the version script) appears as
            // an absolute symbol of value and size 0: not code or data.
            if (sym.st_shndx == SHN_ABS && sym.st_value == 0 && sym.st_size == 0) continue;
            if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE) continue;
            if (vis == STV_HIDDEN || vis == STV_INTERNAL) continue;
            uint64_t name_at = uint64_t(strtab.sh_offset) + sym.st_name;
            if (sym.st_name >= strtab.sh_size || name_at >= bytes.size()) not_elf(file, "symbol name out of range");
            uint64_t limit = std::min<uint64_t>(bytes.size(), uint64_t(strtab.sh_offset) + strtab.sh_size);
            const char* begin = reinterpret_cast<const char*>(bytes.data() + name_at);
            const void* nul = std::memchr(begin, '\0', limit - name_at);
            if (nul == nullptr) not_elf(file, "unterminated symbol name");
            out.push_back({std::string(begin, static_cast<const char*>(nul)), Type(sym.st_info) == STT_FUNC});
        }
    }
    return out;
}

// The DT_RUNPATH and DT_RPATH strings of the .dynamic section, split at ':'.
template <class Ehdr, class Shdr, class Dyn>
std::vector<std::string> read_runpath(const std::filesystem::path& file, const std::vector<unsigned char>& bytes)
{
    Ehdr eh;
    if (!read_at(bytes, 0, eh)) not_elf(file, "truncated ELF header");
    if (eh.e_shentsize != sizeof(Shdr)) not_elf(file, "unexpected ELF section header size");
    std::vector<std::string> out;
    for (uint64_t i = 0; i < eh.e_shnum; ++i) {
        Shdr sh;
        if (!read_at(bytes, eh.e_shoff + i * sizeof(Shdr), sh)) not_elf(file, "truncated ELF section table");
        if (sh.sh_type != SHT_DYNAMIC) continue;
        Shdr strtab;
        if (sh.sh_link >= eh.e_shnum || !read_at(bytes, eh.e_shoff + uint64_t(sh.sh_link) * sizeof(Shdr), strtab))
            not_elf(file, "bad .dynamic string table link");
        uint64_t count = sh.sh_size / sizeof(Dyn);
        for (uint64_t k = 0; k < count; ++k) {
            Dyn dyn;
            if (!read_at(bytes, sh.sh_offset + k * sizeof(Dyn), dyn)) not_elf(file, "truncated .dynamic");
            if (dyn.d_tag == DT_NULL) break;
            if (dyn.d_tag != DT_RUNPATH && dyn.d_tag != DT_RPATH) continue;
            uint64_t offset = dyn.d_un.d_val;
            if (offset >= strtab.sh_size || uint64_t(strtab.sh_offset) + offset >= bytes.size())
                not_elf(file, "RUNPATH string out of range");
            uint64_t begin_at = uint64_t(strtab.sh_offset) + offset;
            uint64_t limit = std::min<uint64_t>(bytes.size(), uint64_t(strtab.sh_offset) + strtab.sh_size);
            const char* begin = reinterpret_cast<const char*>(bytes.data() + begin_at);
            const void* nul = std::memchr(begin, '\0', limit - begin_at);
            if (nul == nullptr) not_elf(file, "unterminated RUNPATH string");
            std::string all(begin, static_cast<const char*>(nul));
            std::size_t from = 0;
            while (from <= all.size()) {
                std::size_t colon = all.find(':', from);
                if (colon == std::string::npos) colon = all.size();
                out.push_back(all.substr(from, colon - from));
                from = colon + 1;
            }
        }
    }
    return out;
}

unsigned char bind64(unsigned char info) { return ELF64_ST_BIND(info); }
unsigned char type64(unsigned char info) { return ELF64_ST_TYPE(info); }
unsigned char bind32(unsigned char info) { return ELF32_ST_BIND(info); }
unsigned char type32(unsigned char info) { return ELF32_ST_TYPE(info); }

}  // namespace

namespace {

std::vector<unsigned char> read_elf_bytes(const std::filesystem::path& file)
{
    std::ifstream in(file, std::ios::binary);
    if (!in) not_elf(file, "cannot open for reading");
    // Plugins are small; a file past 1 GiB is not one we will read whole.
    std::error_code ec;
    auto size = std::filesystem::file_size(file, ec);
    if (ec) not_elf(file, "cannot stat: " + ec.message());
    if (size > (1ull << 30)) not_elf(file, "larger than 1 GiB, not read");
    std::vector<unsigned char> bytes(static_cast<std::size_t>(size));
    if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size)))
        not_elf(file, "read failed");
    if (bytes.size() < EI_NIDENT || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) not_elf(file, "not an ELF file");
    if (bytes[EI_DATA] != ELFDATA2LSB) not_elf(file, "big-endian ELF is not supported");
    if (bytes[EI_CLASS] != ELFCLASS64 && bytes[EI_CLASS] != ELFCLASS32) not_elf(file, "unknown ELF class");
    return bytes;
}

}  // namespace

std::vector<ExportedSymbol> exported_symbols(const std::filesystem::path& file)
{
    const std::vector<unsigned char> bytes = read_elf_bytes(file);
    if (bytes[EI_CLASS] == ELFCLASS64)
        return read_dynsym<Elf64_Ehdr, Elf64_Shdr, Elf64_Sym, bind64, type64>(file, bytes);
    return read_dynsym<Elf32_Ehdr, Elf32_Shdr, Elf32_Sym, bind32, type32>(file, bytes);
}

}  // namespace lapse

namespace lapse::detail {

std::vector<std::string> library_search_paths(const std::filesystem::path& file)
{
    const std::vector<unsigned char> bytes = read_elf_bytes(file);
    if (bytes[EI_CLASS] == ELFCLASS64) return read_runpath<Elf64_Ehdr, Elf64_Shdr, Elf64_Dyn>(file, bytes);
    return read_runpath<Elf32_Ehdr, Elf32_Shdr, Elf32_Dyn>(file, bytes);
}

}  // namespace lapse::detail
