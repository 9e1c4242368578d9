// Catch2's main() for the CPU test executables.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
