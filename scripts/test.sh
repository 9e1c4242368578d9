#!/usr/bin/env bash
# The test command: installs missing dependencies, configures, builds everything (CUDA included
# when nvcc is found, for explicit architectures), runs every test under ctest, prints a summary.
#   scripts/test.sh [--build-dir DIR] [--cuda-arch "80;90"] [--no-install] [--sanitize] [-- extra ctest args]
# GPU tests exit 77 without a GPU and are reported by ctest as Skipped. --sanitize: a CPU-only build
# with AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer in build-asan/ (any report fails
# the test that made it; about 3x slower than Release).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD=""; ARCH="${MOE_CUDA_ARCHITECTURES:-80;90}"; INSTALL=1; SANITIZE=0; CTEST_ARGS=()
while (( $# )); do
  case "$1" in
    --build-dir) BUILD="$2"; shift 2 ;;
    --cuda-arch) ARCH="$2"; shift 2 ;;
    --no-install) INSTALL=0; shift ;;
    --sanitize) SANITIZE=1; shift ;;
    --) shift; CTEST_ARGS=("$@"); break ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done
if (( INSTALL )) && ! "$ROOT/scripts/install-deps.sh" --check; then "$ROOT/scripts/install-deps.sh"; fi
# nvcc is usually not on PATH in a fresh shell.
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
JOBS="$(nproc)"
start=$(date +%s)
CONFIG=(-DCMAKE_BUILD_TYPE=Release -DMOE_CUDA_ARCHITECTURES="$ARCH")
if (( SANITIZE )); then
  BUILD="${BUILD:-$ROOT/build-asan}"
  SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
  CONFIG=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOE_CUDA=OFF "-DCMAKE_CXX_FLAGS=$SAN" "-DCMAKE_EXE_LINKER_FLAGS=$SAN")
  export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1" UBSAN_OPTIONS="print_stacktrace=1"
fi
BUILD="${BUILD:-$ROOT/build}"
cmake -S "$ROOT" -B "$BUILD" "${CONFIG[@]}"
cmake --build "$BUILD" -j "$JOBS"
built=$(date +%s)
set +e
(cd "$BUILD" && ctest --output-on-failure -j "$JOBS" "${CTEST_ARGS[@]}")
rc=$?
set -e
echo "test.sh: build $((built - start)) s, tests $(( $(date +%s) - built )) s, ctest exit code $rc"
exit $rc
