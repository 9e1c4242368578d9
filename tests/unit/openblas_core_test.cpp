// common/openblas_core.h: which OPENBLAS_CORETYPE a moe program sets for itself. OpenBLAS 0.3.21 falls back to its
// SSE3 "Prescott" set on Xeons it does not know; a CPU with AVX-512 (F, BW, DQ, VL) then gets "SkylakeX", one with
// AVX2 and FMA "Haswell", and a set OpenBLAS chose with AVX2 is kept. The rerun itself is checked by
// tests/bench/bench_test.cpp ("the moe-bench binary": the kernels a program runs, from its --cpu-info).
#include "common/openblas_core.h"

#include <catch2/catch.hpp>

using namespace moe;

TEST_CASE("openblas_core_override: the AVX2 or AVX-512 set where OpenBLAS chose an older one", "[unit][openblas]") {
  for (const char* old : {"Prescott", "Core2", "Nehalem", "Sandybridge", "Unknown", ""}) {
    INFO(old);
    CHECK(openblas_core_override(old, true, true) == "SkylakeX");
    CHECK(openblas_core_override(old, false, true) == "Haswell");
    CHECK(openblas_core_override(old, false, false).empty());  // no AVX2: OpenBLAS's choice stands
  }
  for (const char* wide :
       {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids", "Excavator", "zen", "HASWELL"}) {
    INFO(wide);
    CHECK(openblas_core_override(wide, true, true).empty());
    CHECK(openblas_core_override(wide, false, true).empty());
  }
}

TEST_CASE("openblas_core: the name of the set this process's OpenBLAS runs", "[unit][openblas]") {
  CHECK_FALSE(openblas_core().empty());
}
