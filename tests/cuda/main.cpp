// Catch2's main for the CUDA plugin's tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
