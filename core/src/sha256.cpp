// SHA-256 of a plugin file, for configs that pin one. OpenSSL's libcrypto
// is on the machine already, so the core uses it rather than carrying its
// own implementation of a hash.
#include <lapse/core/error.hpp>
#include <lapse/core/plugin.hpp>

#include <openssl/evp.h>

#include <fstream>
#include <memory>

namespace lapse {

std::string sha256_file(const std::filesystem::path& file)
{
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Error(LAPSE_ERROR_LOAD, file.string() + ": cannot open for hashing");
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
        throw Error(LAPSE_ERROR_INTERNAL, file.string() + ": cannot start SHA-256");
    char buffer[1 << 16];
    while (in) {
        in.read(buffer, sizeof buffer);
        if (in.gcount() > 0 && EVP_DigestUpdate(ctx.get(), buffer, static_cast<size_t>(in.gcount())) != 1)
            throw Error(LAPSE_ERROR_INTERNAL, file.string() + ": SHA-256 update failed");
    }
    if (in.bad()) throw Error(LAPSE_ERROR_LOAD, file.string() + ": read failed while hashing");
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(ctx.get(), digest, &length) != 1)
        throw Error(LAPSE_ERROR_INTERNAL, file.string() + ": SHA-256 final failed");
    static const char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < length; ++i) {
        out += hex[digest[i] >> 4];
        out += hex[digest[i] & 15];
    }
    return out;
}

}  // namespace lapse
