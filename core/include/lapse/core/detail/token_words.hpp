// lapse core, internal (installed, included by the public headers): a
// token as the two 8-byte words the ABI passes it in.
#pragma once

#include <lapse/window.h>

#include <bit>
#include <cstdint>

namespace lapse::detail {

// A token held as the two 8-byte words the ABI passes it in. Held as a
// lapse_token, the compiler keeps its three fields apart, and passing it
// by value then rebuilds the second word on the stack: two 4-byte stores
// read back by one 8-byte load, which the CPU cannot forward (a stall of
// a dozen cycles on every profile_end).
struct TokenWords {
    uint64_t id = 0;
    uint64_t tail = 0;  // opened_on and reserved, as lapse_token lays them out

    constexpr TokenWords() noexcept = default;
    constexpr TokenWords(uint64_t id_word, uint64_t tail_word) noexcept : id(id_word), tail(tail_word) {}
    constexpr TokenWords(const lapse_token& token) noexcept : TokenWords(std::bit_cast<TokenWords>(token)) {}
    constexpr operator lapse_token() const noexcept { return std::bit_cast<lapse_token>(*this); }
};
static_assert(lapse_token(TokenWords(lapse_token{7, 3, 5})).id == 7 &&
                  lapse_token(TokenWords(lapse_token{7, 3, 5})).opened_on == 3 &&
                  lapse_token(TokenWords(lapse_token{7, 3, 5})).reserved == 5,
              "a token must come back from TokenWords bit for bit");

}  // namespace lapse::detail
