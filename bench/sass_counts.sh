#!/usr/bin/env bash
# sass_counts.sh [TREE] - static SASS of the MPM kernels for sm_90, without
# a GPU (docs/BENCH_LOG.md, "The constitutive update's instructions"): builds
# TREE's kernels/mpm.cu (default: this checkout) and this checkout's
# bench/constitutive_sass.cu against TREE's include/ with nvcc, and prints
# per kernel the SASS instructions (NOPs not counted), the instructions in
# the body of its longest backward branch (a loop: the SVDs' Jacobi
# sweep), registers, and the local frame and spills of --resource-usage;
# the binning kernels (bin_keys, key_scatter, bin_ranges, bin_flags,
# bin_list) as well.
#   NVCC      default nvcc on PATH, else /usr/local/cuda/bin/nvcc
#   CUOBJDUMP default cuobjdump on PATH
#   SASS_FLAGS more nvcc flags, e.g. -DFIRN_BINNED_MIN_BLOCKS=5 (kernels/mpm.cu)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tree=$(cd "${1:-$here}" && pwd)
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump || echo cuobjdump)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=(-O3 -lineinfo -std=c++17 -gencode arch=compute_90,code=sm_90 -I"$tree/include"
    -I"$tree/host" -DFIRN_WITH_CUDA --resource-usage ${SASS_FLAGS:-})
for src in "$tree/kernels/mpm.cu" "$here/bench/constitutive_sass.cu"; do
    name=$(basename "$src" .cu)
    "$NVCC" "${flags[@]}" -c -o "$tmp/$name.o" "$src" >"$tmp/$name.ru" 2>&1 ||
        { cat "$tmp/$name.ru" >&2; exit 1; }
    "$CUOBJDUMP" -sass "$tmp/$name.o" >"$tmp/$name.sass"
    python3 - "$tmp/$name.sass" "$tmp/$name.ru" <<'PY'
import re, subprocess, sys
sass, ru = sys.argv[1], sys.argv[2]
info, fn = {}, None
for line in open(ru):
    m = re.search(r"Function properties for (\S+)", line)
    if m:
        fn = m.group(1)
        continue
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m and fn:
        info.setdefault(fn, {})["frame"] = "/".join(m.groups())
    m = re.search(r"Used (\d+) registers", line)
    if m and fn:
        info.setdefault(fn, {})["regs"] = m.group(1)
count, loop, addr = {}, {}, {}
fn = None
ins = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?);")
for line in open(sass):
    m = re.search(r"Function : (\S+)", line)
    if m:
        fn = m.group(1)
        count[fn], loop[fn], addr[fn] = 0, 0, []
        continue
    m = ins.match(line)
    if not m or fn is None:
        continue
    a, text = int(m.group(1), 16), m.group(2)
    nop = re.search(r"\bNOP\b", text) is not None
    addr[fn].append((a, nop))
    if not nop:
        count[fn] += 1
    b = re.search(r"\bBRA\b.*?(0x[0-9a-f]+)", text)
    if b and int(b.group(1), 16) < a:
        body = sum(1 for x, n in addr[fn] if int(b.group(1), 16) <= x <= a and not n)
        loop[fn] = max(loop[fn], body)
hot = ("p2g", "g2p", "g2p2g", "g2p2g_fixed", "constitutive", "svd3", "svd3_eig", "bin_keys", "key_scatter",
       "bin_ranges", "bin_flags", "bin_list")
for f in sorted(count):
    name = subprocess.run(["c++filt", f], capture_output=True, text=True).stdout.strip()
    base = re.sub(r"^void ", "", name).split("(")[0]
    if re.sub(r"<.*", "", base) not in hot and not re.sub(r"<.*", "", base).startswith("p2g"):
        continue
    i = info.get(f, {})
    print(f"{base:24s} {count[f]:6d} instructions  loop body {loop[f]:4d}  "
          f"registers {i.get('regs', '?'):>3}  frame/spill stores/loads {i.get('frame', '?')}")
PY
done
