# The fuzz build (-DMOE_FUZZ=ON, clang only; scripts/fuzz.sh configures and drives it): moe_core without
# CUDA, compiled with libFuzzer's coverage, AddressSanitizer (LeakSanitizer included) and
# UndefinedBehaviorSanitizer (any report aborts), and one executable fuzz_<name> per harness in
# tests/fuzz. Nothing else is built. Covered by `scripts/fuzz.sh`, which test.sh runs.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "MOE_FUZZ needs clang: configure with CC=clang CXX=clang++ (scripts/fuzz.sh does)")
endif()
set(MOE_SANITIZERS -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
add_compile_options(${MOE_SANITIZERS} -fsanitize=fuzzer-no-link -O1 -g)
add_link_options(${MOE_SANITIZERS})
add_subdirectory(lib)

file(GLOB MOE_FUZZ_HARNESSES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fuzz/*.cpp)
list(FILTER MOE_FUZZ_HARNESSES EXCLUDE REGEX "/replay_main\\.cpp$")
foreach(src ${MOE_FUZZ_HARNESSES})
  get_filename_component(name ${src} NAME_WE)
  add_executable(fuzz_${name} ${src})
  target_link_libraries(fuzz_${name} PRIVATE moe_core)
  target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
endforeach()
