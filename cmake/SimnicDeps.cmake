# Every dependency comes from a Debian 12 package; scripts/setup.sh installs
# them. A missing one stops configuration with the package to install.

find_package(PkgConfig REQUIRED)

macro(simnic_require_pkg target module debpkg)
  pkg_check_modules(${target} IMPORTED_TARGET ${module})
  if(NOT ${target}_FOUND)
    message(FATAL_ERROR "pkg-config module '${module}' not found: apt-get install ${debpkg}")
  endif()
endmacro()

simnic_require_pkg(SYSTEMC systemc libsystemc-dev)
simnic_require_pkg(IBVERBS libibverbs libibverbs-dev)
simnic_require_pkg(RDMACM librdmacm librdmacm-dev)
simnic_require_pkg(PCAP libpcap libpcap-dev)
simnic_require_pkg(ZLIB zlib zlib1g-dev)

find_package(verilator 5 QUIET HINTS $ENV{VERILATOR_ROOT} /usr/share/verilator)
if(NOT verilator_FOUND)
  message(FATAL_ERROR "Verilator 5 CMake package not found: apt-get install verilator")
endif()

find_package(Catch2 2 QUIET)
if(NOT Catch2_FOUND)
  message(FATAL_ERROR "Catch2 v2 not found: apt-get install catch2")
endif()
include(Catch)

find_package(CLI11 QUIET)
if(NOT CLI11_FOUND AND NOT EXISTS /usr/include/CLI/CLI.hpp)
  message(FATAL_ERROR "CLI11 not found: apt-get install libcli11-dev")
endif()

find_package(nlohmann_json 3 QUIET)
if(NOT nlohmann_json_FOUND)
  message(FATAL_ERROR "nlohmann-json not found: apt-get install nlohmann-json3-dev")
endif()

# toml++ (the `model` device's configuration file). Debian's package ships a
# CMake config whose target links the compiled libtomlplusplus.so.
find_package(tomlplusplus 3 QUIET)
if(NOT tomlplusplus_FOUND)
  message(FATAL_ERROR "toml++ 3 not found: apt-get install libtomlplusplus-dev")
endif()

find_program(TSHARK_EXECUTABLE tshark)
