// openblas_core.h implementation.
#include "common/openblas_core.h"

#include <cblas.h>

#include <algorithm>
#include <array>

namespace moe {

std::string openblas_core() {
  const char* name = openblas_get_corename();
  return name ? name : "";
}

std::string openblas_core_override(std::string_view core, bool avx512, bool avx2) {
  // OpenBLAS 0.3.21's x86-64 sets with AVX2 kernels (driver/others/dynamic.c); the names compare case-blind there
  constexpr std::array<std::string_view, 6> kWide = {"Haswell",        "Zen",      "SkylakeX", "Cooperlake",
                                                     "SapphireRapids", "Excavator"};
  for (std::string_view wide : kWide)
    if (core.size() == wide.size() &&
        std::equal(core.begin(), core.end(), wide.begin(), [](char a, char b) { return (a | 0x20) == (b | 0x20); }))
      return "";
  return avx512 ? "SkylakeX" : avx2 ? "Haswell" : "";
}

std::string openblas_core_override() {
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return openblas_core_override(openblas_core(), avx512, avx2);
}

}  // namespace moe
