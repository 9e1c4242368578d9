#!/usr/bin/env bash
# The test command: installs missing dependencies, configures, builds everything (CUDA included
# when nvcc is found, for explicit architectures), runs every test under ctest, prints a summary.
#   scripts/test.sh [--build-dir DIR] [--cuda-arch "80;90"] [--no-install] [-- extra ctest args]
# GPU tests exit 77 without a GPU and are reported by ctest as Skipped.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$ROOT/build"; ARCH="${MOE_CUDA_ARCHITECTURES:-80;90}"; INSTALL=1; CTEST_ARGS=()
while (( $# )); do
  case "$1" in
    --build-dir) BUILD="$2"; shift 2 ;;
    --cuda-arch) ARCH="$2"; shift 2 ;;
    --no-install) INSTALL=0; shift ;;
    --) shift; CTEST_ARGS=("$@"); break ;;
    -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done
if (( INSTALL )) && ! "$ROOT/scripts/install-deps.sh" --check; then "$ROOT/scripts/install-deps.sh"; fi
# nvcc is usually not on PATH in a fresh shell.
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
JOBS="$(nproc)"
start=$(date +%s)
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DMOE_CUDA_ARCHITECTURES="$ARCH"
cmake --build "$BUILD" -j "$JOBS"
built=$(date +%s)
set +e
(cd "$BUILD" && ctest --output-on-failure -j "$JOBS" "${CTEST_ARGS[@]}")
rc=$?
set -e
echo "test.sh: build $((built - start)) s, tests $(( $(date +%s) - built )) s, ctest exit code $rc"
exit $rc
