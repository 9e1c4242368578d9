# Sourced by scripts/bench-gpu.sh and scripts/bench-e2e.sh: the dependency check and the Release
# build (MOE_CUDA_ARCHITECTURES=90, the H100) that both measuring scripts need.
#   gpu_build BUILD_DIR DEBS_DIR LOG TARGET...
# Installs the Debian dependencies from DEBS_DIR (.deb files made by scripts/bundle-deps.sh) when they
# are missing, then configures and builds TARGETs in BUILD_DIR, the build's output going to LOG.
gpu_build() {
  local build="$1" debs="$2" log="$3" root
  shift 3
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
  command -v nvcc >/dev/null || { echo "gpu_build: nvcc not found: a GPU build needs the CUDA toolkit" >&2; return 1; }
  [[ -z "$debs" && -d "$root/third_party/debs" ]] && debs="$root/third_party/debs"  # bundle-deps.sh's default
  if ! "$root/scripts/install-deps.sh" --check; then
    if [[ -n "$debs" ]]; then
      "$root/scripts/install-deps.sh" --offline "$debs" || return 1
    else
      echo "gpu_build: Debian dependencies missing and no --debs DIR (make one with scripts/bundle-deps.sh)" >&2
      return 1
    fi
  fi
  {
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMOE_CUDA_ARCHITECTURES=90 &&
      cmake --build "$build" -j "$(nproc)" --target "$@"
  } > "$log" 2>&1 || { tail -40 "$log"; echo "gpu_build: build failed (see $log)" >&2; return 1; }
}
