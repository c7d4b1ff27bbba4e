// A pinned sha256 pins the code that runs, not a file that was hashed a
// moment before: the core hashes the descriptor it opened and has the
// dynamic loader map that same descriptor. A thread renaming two different
// plugins onto one name in a loop must never get the unpinned one loaded.
#include "support.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>

namespace fs = std::filesystem;
using hardening::error_of;

TEST_CASE("a pinned sha256 holds for the code loaded while another file is renamed onto the name", "[trust][sha256]")
{
    hardening::TempDir tmp;
    const fs::path pinned_copy = tmp.path / "good.so";
    const fs::path other_copy = tmp.path / "other.so";
    fs::copy_file(hardening::fixture("lapse_good.so"), pinned_copy);
    fs::copy_file(hardening::fixture("lapse_other.so"), other_copy);
    const std::string pin = lapse::sha256_file(pinned_copy);
    const fs::path target = tmp.path / "lapse_swapped.so";
    fs::copy_file(pinned_copy, target);

    // Swaps the two plugins under `target`, each rename atomic, as fast as it can.
    std::atomic<bool> stop{false};
    std::atomic<long> swaps{0};
    std::thread renamer([&] {
        const std::string staged_good = (tmp.path / "staged_good").string();
        const std::string staged_other = (tmp.path / "staged_other").string();
        while (!stop.load(std::memory_order_relaxed)) {
            if (::link(pinned_copy.c_str(), staged_good.c_str()) == 0) std::rename(staged_good.c_str(), target.c_str());
            if (::link(other_copy.c_str(), staged_other.c_str()) == 0)
                std::rename(staged_other.c_str(), target.c_str());
            swaps.fetch_add(1, std::memory_order_relaxed);
        }
    });

    const fs::path config_file = tmp.path / "lapse.toml";
    hardening::write_file(config_file, "[backend]\nplugin = \"lapse_swapped.so\"\nsha256 = \"" + pin + "\"\n");
    const lapse::Config config = lapse::Config::from_file(config_file);
    lapse::Runtime runtime;
    int loaded = 0, refused = 0, wrong_code = 0;
    for (int i = 0; i < 1500; ++i) {
        try {
            lapse::Device d = runtime.open(config);
            ++loaded;
            if (d.info().plugin != "good") ++wrong_code;
        } catch (const lapse::Error& e) {
            // The other file was the one opened: refused by its hash.
            if (std::string(e.what()).find("the config pins " + pin) == std::string::npos) FAIL(e.what());
            ++refused;
        }
    }
    stop = true;
    renamer.join();
    INFO("loaded " << loaded << ", refused " << refused << ", swaps " << swaps.load());
    CHECK(wrong_code == 0);
    CHECK(loaded > 0);   // the race really ran both ways
    CHECK(refused > 0);
    CHECK_FALSE(hardening::mapped(target));
}
