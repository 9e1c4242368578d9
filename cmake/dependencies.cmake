# Finds moe's dependencies as third_party/manifest lists them (system packages or the offline prefix .deps/usr).
# moe_find_manifest(SCOPE) calls find_package with the CMake line of every stanza of that scope, REQUIRED
# unless the stanza says "Optional: yes". A macro, not a function: find_package's result variables
# (MPI_C_FOUND, CUDAToolkit_LIBRARY_DIR, ...) must reach the caller's scope. SentencePiece and OpenBLAS have
# no CMake package in Debian, and cpp-httplib only a pkg-config file, so their stanzas carry no CMake line
# and are found by path below.
# Covered by every build, and by tests/scripts/third_party.sh (manifest against the installed packages).
macro(moe_find_manifest_flush_ scope)
  if(_moe_scope STREQUAL "${scope}" AND _moe_cmake)
    separate_arguments(_moe_args UNIX_COMMAND "${_moe_cmake}")
    if(_moe_optional STREQUAL "yes")
      find_package(${_moe_args})
    else()
      find_package(${_moe_args} REQUIRED)
    endif()
  endif()
  set(_moe_scope "")
  set(_moe_cmake "")
  set(_moe_optional "")
endmacro()

macro(moe_find_manifest scope)
  file(STRINGS ${CMAKE_SOURCE_DIR}/third_party/manifest _moe_lines REGEX "^(Name|Scope|CMake|Optional):")
  set(_moe_scope "")
  set(_moe_cmake "")
  set(_moe_optional "")
  foreach(_moe_line IN LISTS _moe_lines)
    string(REGEX REPLACE "^([A-Za-z]+):[ \t]*(.*)$" "\\1" _moe_key "${_moe_line}")
    string(REGEX REPLACE "^([A-Za-z]+):[ \t]*(.*)$" "\\2" _moe_value "${_moe_line}")
    if(_moe_key STREQUAL "Name")
      moe_find_manifest_flush_(${scope})
    elseif(_moe_key STREQUAL "Scope")
      string(REGEX REPLACE "[ \t].*" "" _moe_scope "${_moe_value}")
    elseif(_moe_key STREQUAL "CMake")
      set(_moe_cmake "${_moe_value}")
    elseif(_moe_key STREQUAL "Optional")
      set(_moe_optional "${_moe_value}")
    endif()
  endforeach()
  moe_find_manifest_flush_(${scope})
endmacro()

find_package(Threads REQUIRED)
moe_find_manifest(build)
if(MOE_TESTS)
  moe_find_manifest(test)
endif()

find_path(SENTENCEPIECE_INCLUDE_DIR sentencepiece_processor.h REQUIRED)
find_library(SENTENCEPIECE_LIBRARY NAMES sentencepiece REQUIRED)
find_library(SENTENCEPIECE_TRAIN_LIBRARY NAMES sentencepiece_train REQUIRED)
add_library(moe_sentencepiece INTERFACE)
target_include_directories(moe_sentencepiece SYSTEM INTERFACE ${SENTENCEPIECE_INCLUDE_DIR})
target_link_libraries(moe_sentencepiece INTERFACE ${SENTENCEPIECE_TRAIN_LIBRARY} ${SENTENCEPIECE_LIBRARY})

# cpp-httplib: Debian builds it as a shared library (with OpenSSL, zlib and Brotli) and ships a pkg-config
# file but no CMake package; its header must see the same feature macros as the library was built with.
find_path(HTTPLIB_INCLUDE_DIR httplib.h REQUIRED)
find_library(HTTPLIB_LIBRARY NAMES cpp-httplib REQUIRED)
add_library(moe_httplib INTERFACE)
target_include_directories(moe_httplib SYSTEM INTERFACE ${HTTPLIB_INCLUDE_DIR})
target_compile_definitions(moe_httplib INTERFACE CPPHTTPLIB_OPENSSL_SUPPORT CPPHTTPLIB_ZLIB_SUPPORT CPPHTTPLIB_BROTLI_SUPPORT)
target_link_libraries(moe_httplib INTERFACE ${HTTPLIB_LIBRARY} Threads::Threads)

# OpenBLAS (Debian keeps cblas.h under openblas-pthread/).
find_path(OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas-pthread x86_64-linux-gnu/openblas-pthread openblas REQUIRED)
find_library(OPENBLAS_LIBRARY NAMES openblas PATH_SUFFIXES openblas-pthread x86_64-linux-gnu/openblas-pthread REQUIRED)
add_library(moe_blas INTERFACE)
target_include_directories(moe_blas SYSTEM INTERFACE ${OPENBLAS_INCLUDE_DIR})
target_link_libraries(moe_blas INTERFACE ${OPENBLAS_LIBRARY})

# oneDNN (optional, third_party/manifest): found by path, not by its CMake package, which requires the OpenCL
# development files for its GPU runtime that moe does not use. Only lib/ops/cpu_gemm.cpp sees it (lib/CMakeLists.txt),
# so that the other objects' compile lines, and their ccache entries, do not change. Without it: OpenBLAS.
find_path(DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.h)
find_library(DNNL_LIBRARY NAMES dnnl)
if(DNNL_INCLUDE_DIR AND DNNL_LIBRARY)
  message(STATUS "oneDNN: ${DNNL_LIBRARY} (CPU GEMM backend)")
else()
  message(STATUS "oneDNN: not found, the CPU GEMMs use OpenBLAS only")
endif()
