#!/usr/bin/env python3
"""The GPU-free performance proxies of moe's CUDA kernels, from the nvcc build CI makes for sm_90a
(scripts/gpu-pack.sh): for each kernel its registers, spills and static shared memory (ptxas), its
largest block and dynamic shared memory (the emulated parity suite's emu-kernels.tsv), the occupancy
those allow on an H100/H200 SM, and the tensor-core instruction classes its SASS holds, checked
against the kernel variant table (moe-bench --list-variants): HMMA in wmma and mma.sync variants, HGMMA
in wgmma ones, neither in SIMT ones; every kernel but those of sm_90-only variants must fit the 163 KiB
of shared memory of an sm_80 block. The toolkit CI installs has no cuobjdump or nvdisasm, so the
instruction classes are read from the cubins' encodings (the low 12 bits of each 128-bit instruction
are its opcode), calibrated in the same run: probe kernels with and without each instruction are
compiled by the same nvcc and the opcodes only the former contain name the class (wgmma.commit_group
alone assembles to an HGMMA too, so the wgmma probes leave it out). Writes the table to
OUT (TSV) and prints it; exits 1 when a variant's kernel lacks its class, holds a forbidden one, or is
not compiled at all.
  kernel-sass.py CUBIN_DIR PTXAS_DIR KERNELS_TSV VARIANTS_TSV OUT NVCC
"""
import os
import re
import struct
import subprocess
import sys
import tempfile

SM80_SHARED = 163 * 1024  # the opt-in shared memory of an sm_80 block (the emulator's devices allow sm_90's)

PROBES = r"""
#include <cstdint>
__global__ void simt(float* o, const uint32_t* in) {
  float d[4] = {0, 0, 0, 0};
  for (int i = 0; i < 4; ++i) d[i] = __uint_as_float(in[i]) * __uint_as_float(in[4 + i % 2]) + d[i];
  for (int i = 0; i < 4; ++i) o[i] = d[i];
}
__global__ void hmma(float* o, const uint32_t* in) {
  float d[4] = {0, 0, 0, 0};
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(in[0]), "r"(in[1]), "r"(in[2]), "r"(in[3]), "r"(in[4]), "r"(in[5]));
  for (int i = 0; i < 4; ++i) o[i] = d[i];
}
template <bool Mma>
__global__ void wg(float* o, uint64_t a, uint64_t b) {
  float d[4] = {0, 0, 0, 0};
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  if (Mma)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, %4, %5, p, 1, 1, 0, 0;\n}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(a), "l"(b));
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");  // no commit_group: it assembles to an HGMMA
  for (int i = 0; i < 4; ++i) o[i] = d[i];
}
template __global__ void wg<true>(float*, uint64_t, uint64_t);
template __global__ void wg<false>(float*, uint64_t, uint64_t);
"""


def text_sections(path):
    """{mangled kernel name: set of 12-bit opcodes} of a cubin (ELF64)."""
    data = open(path, "rb").read()
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    entsize, count, strndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * entsize) for i in range(count)]
    names = headers[strndx][4]
    out = {}
    for h in headers:
        name = data[names + h[0]:data.index(b"\0", names + h[0])].decode()
        if name.startswith(".text."):
            body = data[h[4]:h[4] + h[5]]
            out[name[6:]] = {struct.unpack_from("<Q", body, i)[0] & 0xFFF for i in range(0, len(body) - 15, 16)}
    return out


def calibrate(nvcc):
    with tempfile.TemporaryDirectory() as d:
        src, cubin = os.path.join(d, "probes.cu"), os.path.join(d, "probes.cubin")
        open(src, "w").write(PROBES)
        subprocess.run([nvcc, "-cubin", "-gencode", "arch=compute_90a,code=sm_90a", "-o", cubin, src], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ops = {demangle([k])[0].split("(")[0]: v for k, v in text_sections(cubin).items()}
    hmma = ops["hmma"] - ops["simt"]
    hgmma = ops["void wg<true>"] - ops["void wg<false>"]
    if not hmma or not hgmma:
        sys.exit("kernel-sass: the probes did not isolate the HMMA or HGMMA opcodes: %s" % ops)
    return {"HMMA": hmma, "HGMMA": hgmma}


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def readable(demangled):
    """The emulator's form of a kernel name: no return type, no parameter list."""
    s = re.sub(r"^void ", "", demangled)
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        if s[i] == ")":
            depth += 1
        elif s[i] == "(":
            depth -= 1
            if depth == 0:
                return s[:i]
    return s


def ptxas_resources(ptxas_dir):
    """{mangled: (registers, spill bytes, static shared bytes)} of the sm_90 entries."""
    res = {}
    for f in sorted(os.listdir(ptxas_dir)):
        name, sm90, spill = None, False, 0
        for line in open(os.path.join(ptxas_dir, f)):
            m = re.search(r"Compiling entry function '([^']+)' for '(sm_\w+)'", line)
            if m:
                name, sm90, spill = m.group(1), m.group(2).startswith("sm_90"), 0
                continue
            m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
            if m:
                spill = int(m.group(1)) + int(m.group(2))
            m = re.search(r"Used (\d+) registers(?:, used \d+ barriers)?(?:, (\d+) bytes smem)?", line)
            if m and name and sm90:
                res[name] = (int(m.group(1)), spill, int(m.group(2) or 0))
                name = None
    return res


def occupancy(regs, threads, smem):
    """Resident blocks per SM of sm_90 (65,536 registers in 256-register warp units, 228 KiB of shared
    memory with 1 KiB reserved per block, 64 warps, 32 blocks) and the warps they keep busy."""
    warps = (threads + 31) // 32
    per_warp = (regs * 32 + 255) // 256 * 256
    blocks = min(32, 64 // warps, 65536 // (per_warp * warps) if per_warp else 32,
                 (228 * 1024) // (smem + 1024))
    return blocks, blocks * warps / 64.0


def main():
    cubin_dir, ptxas_dir, kernels_tsv, variants_tsv, out_path, nvcc = sys.argv[1:7]
    classes = calibrate(nvcc)
    found = {}
    for f in sorted(os.listdir(cubin_dir)):
        if f.endswith(".cubin"):
            for name, ops in text_sections(os.path.join(cubin_dir, f)).items():
                found.setdefault(name, set()).update(ops)
    mangled = sorted(found)
    names = dict(zip(mangled, (readable(d) for d in demangle(mangled))))
    launches = {}
    for line in open(kernels_tsv):
        f = line.rstrip("\n").split("\t")
        launches[f[0]] = (int(f[2]), int(f[3]) if len(f) > 3 else 0)
    resources = ptxas_resources(ptxas_dir)
    rows, problems = [], []
    for m in mangled:
        if not names[m].startswith("moe::"):
            continue
        held = sorted(c for c, ops in classes.items() if found[m] & ops)
        regs, spill, smem = resources.get(m, (0, 0, 0))
        threads, dynamic = launches.get(names[m], (0, 0))
        blocks, occ = occupancy(regs, threads or 1024, smem + dynamic)
        rows.append((names[m], regs, spill, smem + dynamic, threads, blocks, occ, ",".join(held) or "-"))
    variants = [l.rstrip("\n").split("\t") for l in open(variants_tsv)][1:]
    for v in variants:
        name, sass, kernels = v[0], v[4], v[5].split(",")
        for k in kernels:
            mine = [r for r in rows if re.search(r"::" + re.escape(k) + r"(<|$)", r[0])]
            if not mine:
                problems.append("%s: kernel %s is not in the sm_90a build" % (name, k))
            for r in mine:
                held = r[7].split(",")
                if sass != "-" and sass not in held:
                    problems.append("%s: %s holds no %s instruction (SASS classes: %s)" % (name, r[0], sass, r[7]))
                if sass == "-" and r[7] != "-":
                    problems.append("%s: %s is a SIMT variant but holds %s" % (name, r[0], r[7]))

    hopper_only = [k for v in variants if int(v[1]) >= 90 for k in v[5].split(",")]
    for r in rows:  # every other kernel may run on an sm_80 GPU
        if r[3] > SM80_SHARED and not any(re.search(r"::" + re.escape(k) + r"(<|$)", r[0]) for k in hopper_only):
            problems.append("%s uses %d bytes of shared memory, above the %d of an sm_80 block" % (r[0], r[3], SM80_SHARED))
    with open(out_path, "w") as o:
        o.write("kernel\tregisters\tspill_bytes\tshared_bytes\tthreads\tblocks_per_sm\toccupancy\ttensor_core\n")
        for r in rows:
            o.write("%s\t%d\t%d\t%d\t%d\t%d\t%.2f\t%s\n" % r)
    for r in rows:
        if r[7] != "-" or r[2] > 0:
            print("kernel-sass: %-90s %3d regs %4d spill %6d smem %4d thr %2d blk %.2f occ %s" % r)
    print("kernel-sass: %d moe kernels in the sm_90a cubins, %d with HMMA, %d with HGMMA; opcodes HMMA %s, "
          "HGMMA %s; table in %s" % (len(rows), sum("HMMA" in r[7].split(",") for r in rows),
                                     sum("HGMMA" in r[7] for r in rows), sorted(map(hex, classes["HMMA"])),
                                     sorted(map(hex, classes["HGMMA"])), out_path))
    for p in problems:
        print("kernel-sass: " + p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
