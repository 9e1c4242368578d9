#!/usr/bin/env bash
# The test command: installs missing dependencies, configures, builds everything and runs every test
# under ctest, prints a summary. Where a GPU answers (nvidia-smi lists one), CUDA is built with nvcc and
# the GPU suite runs on it. Where none answers, the CUDA sources are built for the CUDA emulator
# (emu/README.md): the GPU parity suite and the end-to-end CUDA path run on the CPU under its checker;
# with nvcc on the machine, scripts/gpu-pack.sh also builds them with nvcc for sm_90a in BUILD-gpu/
# (the pack a lent GPU runs: docs/GPU-FIRST-RUN.md), and tests check its size and contents and the
# register budgets from ptxas's reports.
# After ctest, every fuzz harness of tests/fuzz runs for a short fixed time under libFuzzer and the
# sanitizers (scripts/fuzz.sh; needs clang, which the install step brings).
#   scripts/test.sh [--build-dir DIR] [--cuda-arch "80;90"] [--emulate] [--no-install] [--sanitize]
#                   [--fuzz-seconds N] [--no-fuzz] [-- ctest args]
# --emulate: the emulator even where a GPU answers. --sanitize: a CPU-only build with AddressSanitizer,
# LeakSanitizer and UndefinedBehaviorSanitizer in build-asan/ (a report fails the test that made it;
# about 3x slower than Release). --fuzz-seconds: per harness (default 20); --no-fuzz: ctest only.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD=""; ARCH="${MOE_CUDA_ARCHITECTURES:-80;90}"; INSTALL=1; SANITIZE=0; EMULATE=0; CTEST_ARGS=()
FUZZ_SECONDS=20; FUZZ=1
while (( $# )); do
  case "$1" in
    --build-dir) BUILD="$2"; shift 2 ;;
    --cuda-arch) ARCH="$2"; shift 2 ;;
    --emulate) EMULATE=1; shift ;;
    --no-install) INSTALL=0; shift ;;
    --sanitize) SANITIZE=1; shift ;;
    --fuzz-seconds) FUZZ_SECONDS="$2"; shift 2 ;;
    --no-fuzz) FUZZ=0; shift ;;
    --) shift; CTEST_ARGS=("$@"); break ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done
if (( INSTALL )) && ! "$ROOT/scripts/install-deps.sh" --check --with fuzz; then "$ROOT/scripts/install-deps.sh" --with fuzz; fi
# nvcc is usually not on PATH in a fresh shell.
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
# grep reads all of a pipe's input here, never -q: under pipefail -q's early exit can fail the writer with SIGPIPE.
gpu_answers() { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep '^GPU' >/dev/null; }
# ccache, when installed, also serves the GPU pack's build of lib/ from the emulator build's objects:
# in its preprocessor mode the CUDA flags of the two builds do not change most files' hash.
# CCACHE_BASEDIR makes the two builds' paths relative (../layers/common, ../../lib/...), identical
# between BUILD and BUILD-gpu, so that the second build's host objects are cache hits.
if command -v ccache >/dev/null; then
  export CMAKE_CXX_COMPILER_LAUNCHER="${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}" CMAKE_C_COMPILER_LAUNCHER="${CMAKE_C_COMPILER_LAUNCHER:-ccache}"
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"
fi
JOBS="$(nproc)"
start=$(date +%s)
CONFIG=(-DCMAKE_BUILD_TYPE=Release -DMOE_CUDA_ARCHITECTURES="$ARCH")
if (( SANITIZE )); then
  BUILD="${BUILD:-$ROOT/build-asan}"
  SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
  CONFIG=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOE_CUDA=OFF "-DCMAKE_CXX_FLAGS=$SAN" "-DCMAKE_EXE_LINKER_FLAGS=$SAN")
  export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1" UBSAN_OPTIONS="print_stacktrace=1"
elif (( EMULATE )) || ! gpu_answers; then
  echo "test.sh: no GPU answers: the CUDA code runs under the CUDA emulator (emu/README.md)"
  BUILD="${BUILD:-$ROOT/build}"
  CONFIG+=(-DMOE_CUDA_EMU=ON)
  if command -v nvcc >/dev/null; then
    # The same CUDA sources through nvcc: the GPU pack (scripts/gpu-pack.sh: the programs a lent GPU runs,
    # sm_90a; with lib/dist's NCCL backend, which the emulator lacks), its ptxas reports for the
    # register-budget test and the pack for the gpu_pack test.
    GPU_BUILD="$BUILD-gpu"
    pack_data=(--data "$ROOT/../shared/data")
    [[ -f "$ROOT/../shared/data/multi30k/train.en" ]] || pack_data=(--no-data)
    "$ROOT/scripts/gpu-pack.sh" --build-dir "$GPU_BUILD" --out "$GPU_BUILD/pack" "${pack_data[@]}"
    CONFIG+=(-DMOE_PTXAS_REPORT_DIR="$GPU_BUILD/ptxas" -DMOE_GPU_PACK_DIR="$GPU_BUILD/pack")
  else
    echo "test.sh: nvcc not found: the CUDA sources are not compiled for a GPU and register budgets are not checked"
  fi
else
  CONFIG+=(-DMOE_CUDA_EMU=OFF)
fi
BUILD="${BUILD:-$ROOT/build}"
cmake -S "$ROOT" -B "$BUILD" "${CONFIG[@]}"
cmake --build "$BUILD" -j "$JOBS"
built=$(date +%s)
set +e
(cd "$BUILD" && ctest --output-on-failure -j "$JOBS" "${CTEST_ARGS[@]}")
rc=$?
tested=$(date +%s)
fuzz="not run (--no-fuzz)"
if (( FUZZ && !SANITIZE )); then
  if command -v clang++ >/dev/null; then
    "$ROOT/scripts/fuzz.sh" --seconds "$FUZZ_SECONDS" --build-dir "$ROOT/build-fuzz" --jobs "$JOBS"
    frc=$?
    fuzz="exit code $frc"
  else
    fuzz="SKIPPED: clang++ not found (scripts/install-deps.sh --with fuzz); ctest replayed the seeds only"
    echo "test.sh: FUZZING SKIPPED: clang++ not found (install it: scripts/install-deps.sh --with fuzz)" >&2
  fi
fi
set -e
echo "test.sh: build $((built - start)) s, tests $((tested - built)) s, ctest exit code $rc; fuzzing $(( $(date +%s) - tested )) s, $fuzz"
(( rc == 0 )) && rc=${frc:-0}
exit $rc
