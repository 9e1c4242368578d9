#!/usr/bin/env bash
# The ctest gpu_pack (added when scripts/test.sh built a pack): the folder scripts/gpu-pack.sh made is
# within its size limit and holds what scripts/gpu-check.sh unpacks and runs: the six programs (SASS
# for sm_90a, an RPATH of $ORIGIN/../lib), every shared library they need but glibc, the driver and
# CUDA's own, all loaded from the pack with lib/ on LD_LIBRARY_PATH as gpu-check.sh runs them (Debian's
# OpenMPI libraries carry a RUNPATH of their own, which the programs' RPATH does not override), the
# kernel list and the kernel-trace library, OpenMPI's plugins, and the data unless packed --no-data;
# and the programs start: test_gpu finds no GPU here and says why. Then scripts/gpu-check.sh's device
# path on this pack, with a stand-in nvidia-smi that lists a GPU: the preflight must unpack the pack,
# find CUDA's libraries and every library the programs load, and the parity step must fail with the
# CUDA runtime's reason (no GPU here).
#   check-gpu-pack.sh PACK_DIR LIMIT_MIB
set -euo pipefail
PACK="${1:?usage: check-gpu-pack.sh PACK_DIR LIMIT_MIB}"
LIMIT_MIB="${2:?usage: check-gpu-pack.sh PACK_DIR LIMIT_MIB}"
fail() { echo "check-gpu-pack: $*" >&2; exit 1; }
[[ -f "$PACK/moe-gpu.tar.xz" ]] || fail "no $PACK/moe-gpu.tar.xz"
kib="$(du -sk "$PACK" | cut -f1)"
(( kib <= LIMIT_MIB * 1024 )) || fail "$PACK is $(( kib / 1024 )) MiB, above $LIMIT_MIB MiB"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/moe-check-pack.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
tar -C "$WORK" -xJf "$PACK/moe-gpu.tar.xz"
P="$WORK/moe-gpu"
for f in bin/test_gpu bin/moe-train bin/moe-translate bin/moe-score bin/moe-bench bin/moe-serve \
         lib/libmoe-kernel-trace.so kernels.txt MANIFEST; do
  [[ -s "$P/$f" ]] || fail "the pack has no $f"
done
grep -q 'moe::cuda' "$P/kernels.txt" || fail "kernels.txt names no moe kernel"
for b in "$P"/bin/*; do
  [[ "$(readelf -d "$b")" == *'(RPATH)'*'$ORIGIN/../lib'* ]] || fail "$(basename "$b") has no DT_RPATH \$ORIGIN/../lib"
  grep -qa 'sm_90a' "$b" || fail "$(basename "$b") holds no sm_90a code"
done
device_libs='^(libcuda|libcublas|libcublasLt|libnccl)\.so'
export LD_LIBRARY_PATH="$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unresolved="$(ldd "$P"/bin/* | awk '/not found/ {print $1}' | sort -u | grep -Ev "$device_libs" || true)"
[[ -z "$unresolved" ]] || fail "libraries the pack lacks: $unresolved"
outside="$(ldd "$P/bin/moe-train" | awk '/=> \// {print $1, $3}' |
           grep -Ev "$device_libs|^(libc|libm|libdl|libpthread|librt|libresolv|libutil)\.so|/moe-gpu/(bin/\.\./)?lib/" || true)"
[[ -z "$outside" ]] || fail "libraries loaded from outside the pack: $outside"
"$P/bin/moe-train" --help > /dev/null || fail "moe-train does not start"
set +e
MOE_REQUIRE_GPU=1 "$P/bin/test_gpu" > "$WORK/test_gpu.txt" 2>&1
rc=$?
set -e
grep -q 'no GPU available (CUDA built in' "$WORK/test_gpu.txt" || [[ $rc == 0 ]] ||
  fail "test_gpu did not start: $(head -3 "$WORK/test_gpu.txt")"
if [[ "$(ldd "$P/bin/moe-train")" == *libmpi* ]]; then
  [[ -n "$(find "$P/lib/openmpi" -name 'mca_ess_singleton.so' 2>/dev/null)" ]] || fail "OpenMPI's plugins are not packed"
fi
if ! grep -q 'no data' "$P/MANIFEST"; then
  for f in data/multi30k/train.src data/multi30k/test.tgt data/multi30k/vocab.spm data/wikitext-103-sample/wiki.train.tokens; do
    [[ -s "$P/$f" ]] || fail "the pack has no $f"
  done
fi
mkdir -p "$WORK/stand-in"
printf '#!/bin/sh\necho "GPU 0: stand-in for check-gpu-pack.sh (no GPU)"\n' > "$WORK/stand-in/nvidia-smi"
chmod +x "$WORK/stand-in/nvidia-smi"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
TMPDIR="$WORK" PATH="$WORK/stand-in:$PATH" "$ROOT/scripts/gpu-check.sh" "$WORK/out" --pack "$PACK" --steps parity \
  > "$WORK/check.txt" 2>&1 && fail "gpu-check.sh passed without a GPU: $(cat "$WORK/check.txt")"
grep -qE '^\| preflight \| ok \|' "$WORK/out/summary.md" || fail "gpu-check.sh's preflight failed: $(cat "$WORK/out/summary.md")"
tar -xzOf "$WORK/out/logs.tar.gz" logs/parity.log > "$WORK/parity.log"
grep -qE '^\| parity \| FAILED \|' "$WORK/out/summary.md" && grep -q 'no GPU available (CUDA built in' "$WORK/parity.log" ||
  fail "gpu-check.sh's parity step did not report the missing GPU"
echo "check-gpu-pack: OK ($(( kib / 1024 )) MiB of $LIMIT_MIB; $(wc -l < "$P/kernels.txt") kernels; $(ls "$P/lib" | wc -l) libraries)"
