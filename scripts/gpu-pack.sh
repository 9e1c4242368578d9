#!/usr/bin/env bash
# Builds here, with nvcc and no GPU, everything scripts/gpu-check.sh runs on a lent GPU, as one
# git-ignored folder that a device call carries (docs/GPU-FIRST-RUN.md):
#   scripts/gpu-pack.sh [--out DIR] [--build-dir DIR] [--arch LIST] [--data DIR | --no-data] [--limit-mib N]
# DIR (default gpu-pack/) holds moe-gpu.tar.xz, which unpacks to moe-gpu/:
#   bin/   test_gpu moe-train moe-translate moe-score moe-bench: Release, the CUDA runtime linked
#          statically, SASS for LIST (default 90a-real: H100 and H200), stripped, RPATH $ORIGIN/../lib
#   lib/   the shared libraries they load that a CUDA image lacks (yaml-cpp, spdlog, fmt, SentencePiece,
#          OpenBLAS, OpenMPI, libstdc++, ...; not glibc, the driver, cuBLAS/cuBLASLt or NCCL, which
#          the device's CUDA has), and openmpi/: OpenMPI's plugins, for MPI's singleton mode
#   data/  multi30k/ (data-prep/multi30k.sh: the splits and the 8k joint BPE vocabulary) and
#          wikitext-103-sample/ (wiki.train.tokens, wiki.valid.tokens), from --data (default ../shared/data);
#          --no-data leaves them out (scripts/test.sh on a machine without the data: gpu-check's e2e needs them)
#   kernels.txt  every kernel compiled into test_gpu (mangled TAB readable, from the ptxas reports) and
#   lib/libmoe-kernel-trace.so (scripts/internal/kernel-trace.cpp): the never-launched list on the GPU
#   MANIFEST  the commit, nvcc, architectures and every file's size
# and fails when DIR exceeds --limit-mib (default 48; a device call carries at most 64 MiB in all).
# The build folder (default build-gpu/) keeps its ptxas reports in ptxas/ (scripts/internal/register-budget.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }
OUT="$ROOT/gpu-pack"; BUILD="$ROOT/build-gpu"; ARCH="90a-real"; DATA="$ROOT/../shared/data"; LIMIT_MIB=48; WITH_DATA=1
while (( $# )); do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --build-dir) BUILD="$2"; shift 2 ;;
    --arch) ARCH="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --no-data) WITH_DATA=0; shift ;;
    --limit-mib) LIMIT_MIB="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu-pack: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done
fail() { echo "gpu-pack: $*" >&2; exit 1; }
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
for tool in nvcc cmake g++ xz strip ldd c++filt; do command -v "$tool" >/dev/null || fail "$tool not found (the pack needs it)"; done
# The toolkit's root as nvcc itself reports it (TOP= under --dryrun): nvcc on PATH may be a wrapper script
# outside the toolkit (CI's /usr/local/bin/nvcc execs /usr/local/cuda-13.0/bin/nvcc).
CUDA_HOME="$(nvcc --dryrun -c -x cu /dev/null -o /dev/null 2>&1 | sed -n 's/^#\$ TOP=//p' | head -n 1)"
[[ -n "$CUDA_HOME" ]] && CUDA_HOME="$(readlink -f "$CUDA_HOME")" ||
  CUDA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")"
[[ -f "$CUDA_HOME/include/cupti.h" ]] || fail "no cupti.h in $CUDA_HOME/include (the kernel trace needs CUPTI)"
release="$(nvcc --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')"
(( release >= 13 )) || fail "nvcc $release found; the device image has CUDA 13 and the pack needs nvcc 13 or newer"
for f in multi30k/train.en multi30k/val.de multi30k/test_2016_flickr.en wikitext-103-sample/wiki.train.tokens \
         wikitext-103-sample/wiki.valid.tokens; do
  (( !WITH_DATA )) || [[ -f "$DATA/$f" || -f "$DATA/$f.gz" ]] ||
    fail "no $DATA/$f (--data names the folder of multi30k/ and wikitext-103-sample/; --no-data packs none)"
done
step() { echo "== gpu-pack: $* ($(date -u +%H:%M:%S))"; }

step "build in $BUILD (sm $ARCH)"
# --disable-new-dtags: DT_RPATH, which also serves the libraries' own dependencies and OpenMPI's plugins.
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DMOE_CUDA=ON -DMOE_CUDA_EMU=OFF -DMOE_CUDA_ARCHITECTURES="$ARCH" \
  -DMOE_PTXAS_REPORTS=ON '-DCMAKE_BUILD_RPATH=$ORIGIN/../lib' -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags >/dev/null
grep -q '^MOE_WITH_CUDA\|CMAKE_CUDA_COMPILER:' "$BUILD/CMakeCache.txt" || fail "CMake found no CUDA compiler in $BUILD"
BINS=(test_gpu moe-train moe-translate moe-score moe-bench moe-serve)
cmake --build "$BUILD" -j "$(nproc)" --target "${BINS[@]}" moe-vocab

STAGE="$(mktemp -d "${TMPDIR:-/tmp}/moe-gpu-pack.XXXXXX")"
trap 'rm -rf "$STAGE"' EXIT
P="$STAGE/moe-gpu"
mkdir -p "$P/bin" "$P/lib" "$P/data"
step "binaries and the libraries they need"
for b in "${BINS[@]}"; do strip --strip-unneeded -o "$P/bin/$b" "$BUILD/bin/$b"; done
# Everything ldd resolves but glibc, the vDSO, the driver and the CUDA libraries of the device's toolkit.
skip='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libutil|libcuda|libcublas|libcublasLt|libnccl)\.so'
copy_needed() {  # FILE...: copies the shared libraries they need into lib/ (by their own name)
  ldd "$@" 2>/dev/null | awk '/=> \// {print $1, $3}' | sort -u | while read -r name path; do
    [[ "$name" =~ $skip || -e "$P/lib/$name" ]] || cp -L "$path" "$P/lib/$name"
  done
}
copy_needed "$P"/bin/*
# (not `ldd | grep -q`: under pipefail grep's early exit can kill ldd with SIGPIPE and fail the test; it did once)
if [[ "$(ldd "$P/bin/moe-train")" == *libmpi.so* ]] && command -v ompi_info >/dev/null; then
  # MPI's singleton mode (the NCCL step's one rank) loads OpenMPI's plugins from OPAL_PREFIX.
  prefix="$(ompi_info --path prefix | awk '{print $2}')"
  for what in pkglibdir pkgdatadir; do
    dir="$(ompi_info --path "$what" | awk '{print $2}')"
    mkdir -p "$P/lib/openmpi${dir#"$prefix"}"
    cp -rL "$dir/." "$P/lib/openmpi${dir#"$prefix"}/"
  done
  mapfile -d '' plugins < <(find "$P/lib/openmpi" -name '*.so' -print0)
  copy_needed "${plugins[@]}"
fi
g++ -std=c++17 -O2 -shared -fPIC -I"$CUDA_HOME/include" "$ROOT/scripts/internal/kernel-trace.cpp" \
  -o "$P/lib/libmoe-kernel-trace.so" -L"$CUDA_HOME/lib64" -lcupti
# The kernels compiled into test_gpu: the entry functions of the ptxas reports.
awk '/Compiling entry function/ { n = $0; sub(/.*function ./, "", n); sub(/. for .*/, "", n); print n }' \
  "$BUILD"/ptxas/*.txt | sort -u > "$STAGE/kernels"
paste "$STAGE/kernels" <(c++filt < "$STAGE/kernels") > "$P/kernels.txt"
[[ -s "$P/kernels.txt" ]] || fail "no kernels in the ptxas reports of $BUILD/ptxas"
missing="$(LD_LIBRARY_PATH="$P/lib" ldd "$P"/bin/* | grep 'not found' | grep -Ev "$skip" || true)"
[[ -z "$missing" ]] || fail "libraries not found for the pack: $missing"

if (( WITH_DATA )); then
  step "data"
  "$ROOT/data-prep/multi30k.sh" --from "$DATA/multi30k" --out "$P/data/multi30k" --moe-vocab "$BUILD/bin/moe-vocab" \
    > "$STAGE/data.log" 2>&1 || { tail -20 "$STAGE/data.log"; fail "Multi30k preparation failed"; }
  mkdir -p "$P/data/wikitext-103-sample"
  for f in wiki.train.tokens wiki.valid.tokens; do zcat -f "$DATA/wikitext-103-sample/$f"* > "$P/data/wikitext-103-sample/$f"; done
fi

{
  echo "moe $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo '+changes'), packed $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "nvcc $(nvcc --version | sed -n 's/.*release //p'), architectures $ARCH, built on $(. /etc/os-release && echo "$PRETTY_NAME")$( (( WITH_DATA )) || echo ', no data')"
  (cd "$P" && find . -type f -printf '%s %p\n' | sort -k2)
} > "$P/MANIFEST"

step "compress"
mkdir -p "$OUT"
rm -f "$OUT/moe-gpu.tar.xz"
# One xz stream with a dictionary larger than a binary: the six programs carry the same kernels (about 40 MB each
# unpacked), and a window that spans them stores those once (binaries 27 MB -> 8 MB; xz -T0 cuts the stream into
# blocks that cannot see each other). About 2 minutes on one core, 2.7 GB of memory.
tar -C "$STAGE" -cf - moe-gpu | xz -T1 --lzma2=preset=6,dict=256MiB > "$OUT/moe-gpu.tar.xz"
size_kib="$(du -sk "$OUT" | cut -f1)"
echo "gpu-pack: $OUT: $(( size_kib / 1024 )) MiB ($(du -sh "$P" | cut -f1) unpacked; limit $LIMIT_MIB MiB)"
(( size_kib <= LIMIT_MIB * 1024 )) || fail "$OUT is $(( size_kib / 1024 )) MiB, above the limit of $LIMIT_MIB MiB"
echo "gpu-pack: carry [\"$(realpath --relative-to="$ROOT" "$OUT")\"] and run scripts/gpu-check.sh \$OUT (docs/GPU-FIRST-RUN.md)"
