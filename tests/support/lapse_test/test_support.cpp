#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <vector>

namespace lapse_test {

lapse::Error error_of(const std::function<void()>& fn)
{
    try {
        fn();
    } catch (const lapse::Error& e) {
        return e;
    }
    FAIL("expected a lapse::Error, nothing was thrown");
    return lapse::Error(LAPSE_OK, "");
}

TempDir::TempDir()
{
    std::string templ = (std::filesystem::temp_directory_path() / "lapse-test-XXXXXX").string();
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    REQUIRE(::mkdtemp(buf.data()) != nullptr);  // 0700
    path = std::filesystem::canonical(buf.data());
}

TempDir::~TempDir()
{
    std::error_code ec;
    // Permissions a test loosened or tightened must not stop the cleanup.
    std::filesystem::permissions(path, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path, ec);
}

void write_file(const std::filesystem::path& file, const std::string& text)
{
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    REQUIRE(out.good());
}

std::string read_file(const std::filesystem::path& file)
{
    std::ifstream in(file, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace lapse_test
