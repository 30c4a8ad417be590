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
