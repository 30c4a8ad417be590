# Compiler settings for project code. Third-party code (Verilator output,
# SystemC headers) is compiled without -Werror; see simnic_verilated().

add_library(simnic_warnings INTERFACE)
target_compile_options(simnic_warnings INTERFACE -Wall -Wextra
  -Wnon-virtual-dtor -Wimplicit-fallthrough
  $<$<CXX_COMPILER_ID:GNU>:-Wshadow=local>
  $<$<CXX_COMPILER_ID:Clang>:-Wshadow-uncaptured-local>)
if(SIMNIC_WERROR)
  target_compile_options(simnic_warnings INTERFACE -Werror)
endif()

if(SIMNIC_SANITIZE)
  # Applied to everything (including Verilated models) so that containers
  # crossing target boundaries agree on ASan's annotations.
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

if(SIMNIC_FUZZ AND SIMNIC_SANITIZE)
  # libFuzzer's coverage in all project code, not only in each fuzz target's
  # own file: what a fuzzer exercises (the decoder, the engine, the CM, the
  # daemon) lives in the libraries, and without their edges the fuzzer
  # mutates blind. The callbacks resolve to libFuzzer's in the fuzz targets
  # and to the sanitizer runtime's empty ones in every other executable
  # (hence SIMNIC_SANITIZE).
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
