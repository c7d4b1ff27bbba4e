// Text a plugin writes is read within bounds: an error message without its
// NUL, a descriptor name that never ends.
#include "support.hpp"

#include <catch2/catch.hpp>

namespace fs = std::filesystem;
using hardening::error_of;

TEST_CASE("an error message that fills the buffer without a NUL is read to the buffer's end and no further",
          "[text]")
{
    lapse::Runtime runtime;
    const std::string toml =
        "[backend]\nplugin = \"" + hardening::fixture("lapse_unterminated_error.so").string() + "\"\n";
    lapse::Error e = error_of([&] { runtime.open(lapse::Config::from_string(toml, "<unterminated>", {})); });
    CHECK(e.status() == LAPSE_ERROR_DEVICE);
    CHECK(std::string(e.what()) == std::string(LAPSE_ERROR_MESSAGE_CAPACITY, 'E'));
    hardening::require_host_still_works(runtime);
}

TEST_CASE("a descriptor name that is not NUL-terminated within 64 bytes is refused", "[text]")
{
    lapse::Runtime runtime;
    const fs::path plugin = fs::canonical(hardening::fixture("lapse_unterminated_name.so"));
    lapse::Error e = error_of([&] { runtime.load_plugin(plugin.string()); });
    CHECK(e.status() == LAPSE_ERROR_LOAD);
    CHECK(std::string(e.what()) == plugin.string() + ": descriptor name is not NUL-terminated within 64 bytes");
    hardening::require_host_still_works(runtime);
}
