#!/usr/bin/env bash
# kernel_resources.sh [FILE.cu ...] - registers, local frame, spills, shared
# memory and the theoretical occupancy on sm_90 of every kernel of the
# given kernels/*.cu files (default: the SPH, PBD, FEM, neighbour and
# coupling kernels), from nvcc's --resource-usage, without a GPU
# (docs/BENCH_LOG.md, "Registers and occupancy of the other solvers'
# kernels").
#
# Occupancy is the resident warps a multiprocessor can hold over its 64,
# for the block size the file launches its kernels with (its FIRN_*BLOCK
# define, 256 threads in every file listed; a kernel launched with another
# size is marked in the log), limited by registers (65536 a
# multiprocessor, allocated per warp in units of 256), shared memory (228
# KiB a multiprocessor, 1 KiB reserved a block), 32 blocks and 64 warps.
# CUB's and Thrust's kernels (their own block sizes) are listed only when
# they spill.
#   NVCC      default nvcc on PATH, else /usr/local/cuda/bin/nvcc
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(kernels/sph.cu kernels/neighbour.cu kernels/pbd.cu kernels/fem.cu
    kernels/fem_implicit.cu kernels/coupling.cu kernels/pair_sph_rigid.cu kernels/pair_mpm_sph.cu
    kernels/pair_pbd_rigid.cu kernels/pair_fem_rigid.cu)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for src in "${files[@]}"; do
    name=$(basename "$src" .cu)
    "$NVCC" -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -I"$here/include" -I"$here/host" \
        -DFIRN_WITH_CUDA --resource-usage -c -o "$tmp/$name.o" "$here/$src" >"$tmp/$name.ru" 2>&1 ||
        { cat "$tmp/$name.ru" >&2; exit 1; }
    block=$(sed -n 's/^#define FIRN_[A-Z_]*BLOCK \([0-9]*\).*/\1/p' "$here/$src" | head -n 1)
    python3 - "$tmp/$name.ru" "$name" "${block:-256}" <<'PY'
import math, re, subprocess, sys
ru, name, block = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows, fn = {}, None
for line in open(ru):
    m = re.search(r"Function properties for (\S+)", line)
    if m:
        fn = m.group(1)
        rows.setdefault(fn, {"regs": 0, "frame": 0, "spill": 0, "smem": 0})
        continue
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m and fn:
        rows[fn]["frame"] = int(m.group(1))
        rows[fn]["spill"] = int(m.group(2)) + int(m.group(3))
    m = re.search(r"Used (\d+) registers", line)
    if m and fn:
        rows[fn]["regs"] = int(m.group(1))
        s = re.search(r"(\d+) bytes smem", line)
        rows[fn]["smem"] = int(s.group(1)) if s else 0
warps = block // 32
for f, r in sorted(rows.items()):
    kernel = subprocess.run(["c++filt", f], capture_output=True, text=True).stdout.strip()
    kernel = re.sub(r"^void ", "", kernel).split("(")[0]
    if kernel.startswith(("cub::", "thrust::")):
        # CUB's and Thrust's kernels launch with block sizes of their own:
        # only their spills are shown.
        if r["spill"]:
            print(f"{name:13s} {kernel[:60]}... spills {r['spill']} B ({r['regs']} registers)")
        continue
    per_warp = math.ceil(max(r["regs"], 1) * 32 / 256) * 256
    by_regs = 65536 // (per_warp * warps)
    by_smem = (228 * 1024) // (r["smem"] + 1024) if r["smem"] else 32
    blocks = min(32, 64 // warps, by_regs, by_smem)
    print(f"{name:13s} {kernel:30s} registers {r['regs']:3d}  frame {r['frame']:4d} B  "
          f"spills {r['spill']:4d} B  smem {r['smem']:5d} B  occupancy {blocks * warps / 64:4.0%} "
          f"({block} threads)")
PY
done
