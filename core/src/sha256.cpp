// SHA-256 of a plugin file, for configs that pin one, and of a session
// archive's bytes, for its checksum. OpenSSL's libcrypto is on the machine
// already, so the core uses it rather than carrying its own implementation
// of a hash. The loader hashes the descriptor it then loads
// (sha256_of_descriptor), so a pin holds for the code that runs.
#include "plugin_search.hpp"
#include "sha256.hpp"

#include <lapse/core/error.hpp>
#include <lapse/core/plugin.hpp>

#include <openssl/evp.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace lapse {

namespace detail {

namespace {

std::string hex_of(const unsigned char* digest, unsigned int length)
{
    static const char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < length; ++i) {
        out += hex[digest[i] >> 4];
        out += hex[digest[i] & 15];
    }
    return out;
}

}  // namespace

std::string sha256_of_bytes(std::string_view bytes)
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1)
        throw Error(LAPSE_ERROR_INTERNAL, "SHA-256 of " + std::to_string(bytes.size()) + " bytes failed");
    return hex_of(digest, length);
}

std::string sha256_of_descriptor(int fd, const std::filesystem::path& shown_as)
{
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
        throw Error(LAPSE_ERROR_INTERNAL, shown_as.string() + ": cannot start SHA-256");
    char buffer[1 << 16];
    off_t offset = 0;
    for (;;) {
        ssize_t n = ::pread(fd, buffer, sizeof buffer, offset);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            throw Error(LAPSE_ERROR_LOAD, shown_as.string() + ": read failed while hashing: " + std::strerror(errno));
        if (n == 0) break;
        if (EVP_DigestUpdate(ctx.get(), buffer, static_cast<size_t>(n)) != 1)
            throw Error(LAPSE_ERROR_INTERNAL, shown_as.string() + ": SHA-256 update failed");
        offset += n;
    }
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(ctx.get(), digest, &length) != 1)
        throw Error(LAPSE_ERROR_INTERNAL, shown_as.string() + ": SHA-256 final failed");
    return hex_of(digest, length);
}

}  // namespace detail

std::string sha256_file(const std::filesystem::path& file)
{
    int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(LAPSE_ERROR_LOAD, file.string() + ": cannot open for hashing");
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    return detail::sha256_of_descriptor(fd, file);
}

}  // namespace lapse
