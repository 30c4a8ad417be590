// The Catch2 v2 main() of simnic_unit_tests, compiled once into its own
// library so that the test files rebuild quickly.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
