// NameCache: a name of at most 16 bytes is its own key, so names that
// share a prefix, a suffix or a length never hit each other's entry;
// longer names are never cached.
#include "export/name_cache.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

using lapse::cli::NameCache;

TEST_CASE("name cache: distinct short names have distinct keys, and each finds only its own value", "[export][names]")
{
    std::vector<std::string> names{""};
    for (std::size_t n = 1; n <= 16; ++n) {
        names.push_back(std::string(n, 'a'));
        names.push_back(std::string(n - 1, 'a') + "b");   // differs at the end
        names.push_back("b" + std::string(n - 1, 'a'));   // differs at the start
        if (n >= 3) names.push_back(std::string(n / 2, 'a') + "c" + std::string(n - n / 2 - 1, 'a'));  // in the middle
    }
    std::set<std::string> distinct(names.begin(), names.end());
    names.assign(distinct.begin(), distinct.end());

    NameCache cache;
    for (std::size_t i = 0; i < names.size(); ++i) {
        const NameCache::Key k = NameCache::key(names[i]);
        CHECK(cache.find(k) == 0);  // never seen: no false hit on another name's entry
        cache.put(k, i + 1);
        CHECK(cache.find(k) == i + 1);
        for (std::size_t j = 0; j < i; ++j) CHECK_FALSE(NameCache::key(names[j]) == k);
    }
    // What is still cached (slots are shared) says the right value.
    for (std::size_t i = 0; i < names.size(); ++i) {
        const uint64_t v = cache.find(NameCache::key(names[i]));
        CHECK((v == 0 || v == i + 1));
    }
}

TEST_CASE("name cache: names longer than 16 bytes are not cached", "[export][names]")
{
    NameCache cache;
    const NameCache::Key k = NameCache::key("a name of seventeen");
    cache.put(k, 7);
    CHECK(cache.find(k) == 0);
}
