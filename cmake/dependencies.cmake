# Finds the Debian-packaged dependencies (system or the offline prefix .deps/usr).
find_package(Threads REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(ZLIB REQUIRED)
find_package(MPI COMPONENTS C)  # optional: the mpi (and nccl) backends of lib/dist

find_path(SENTENCEPIECE_INCLUDE_DIR sentencepiece_processor.h REQUIRED)
find_library(SENTENCEPIECE_LIBRARY NAMES sentencepiece REQUIRED)
find_library(SENTENCEPIECE_TRAIN_LIBRARY NAMES sentencepiece_train REQUIRED)
add_library(moe_sentencepiece INTERFACE)
target_include_directories(moe_sentencepiece SYSTEM INTERFACE ${SENTENCEPIECE_INCLUDE_DIR})
target_link_libraries(moe_sentencepiece INTERFACE ${SENTENCEPIECE_TRAIN_LIBRARY} ${SENTENCEPIECE_LIBRARY})

# OpenBLAS (Debian keeps cblas.h under openblas-pthread/).
find_path(OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas-pthread x86_64-linux-gnu/openblas-pthread openblas REQUIRED)
find_library(OPENBLAS_LIBRARY NAMES openblas PATH_SUFFIXES openblas-pthread x86_64-linux-gnu/openblas-pthread REQUIRED)
add_library(moe_blas INTERFACE)
target_include_directories(moe_blas SYSTEM INTERFACE ${OPENBLAS_INCLUDE_DIR})
target_link_libraries(moe_blas INTERFACE ${OPENBLAS_LIBRARY})

if(MOE_TESTS)
  find_package(Catch2 2 REQUIRED)
endif()
