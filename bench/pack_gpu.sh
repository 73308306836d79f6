#!/usr/bin/env bash
# pack_gpu.sh - run HERE (a machine with the build dependencies) before a
# device session: builds firn and the test binary for Hopper (sm_90) and
# copies them, with the shared libraries the GPU machine's image lacks
# (cJSON, libpng, Criterion and its dependencies, libgomp), into .gpu/,
# which git ignores and the device tool carries (`carry: [".gpu"]`).
# bench/gpu_check.sh uses .gpu/ when it cannot build there.
set -euo pipefail
cd "$(dirname "$0")/.."
# The pack is tied to a commit: built from a tree whose sources differ from
# it, the device would test code that is in no commit.
if ! git diff --quiet HEAD -- Makefile host kernels include test ||
    [[ -n $(git status --porcelain --untracked-files=all -- Makefile host kernels include test) ]]; then
    echo "pack_gpu.sh: uncommitted changes under Makefile host kernels include test: commit first" >&2
    exit 1
fi
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>.git/info/exclude
# The binaries find the packed libraries through their RPATH (which, unlike
# RUNPATH, also serves the libraries' own dependencies), from .gpu/bin or
# from build/: nothing else on the device sees them.
RPATH="-Wl,--disable-new-dtags,-rpath,'\$\$ORIGIN/../lib:\$\$ORIGIN/../.gpu/lib'"
rm -f build-sm90{,-nofma,-debug}/{firn,test_firn} # relink: make does not track LDFLAGS
make -j"$(nproc)" BUILD=build-sm90 CUDA_ARCH="-gencode arch=compute_90,code=sm_90" \
    LDFLAGS="$RPATH" build-sm90/firn build-sm90/test_firn
# PACK_MAIN_ONLY=1 skips the two variants below (a third of the build time).
MAIN_ONLY=${PACK_MAIN_ONLY:-0}
# The same without fused multiply-adds in device code: gpu_check.sh reruns a
# failing CPU/GPU compare with it, to tell rounding from a real difference.
# The test binary too: a GPU-vs-CPU test that fails is rerun with it.
[[ $MAIN_ONLY == 1 ]] || make -j"$(nproc)" BUILD=build-sm90-nofma CUDA_ARCH="-gencode arch=compute_90,code=sm_90" \
    NVCCFLAGS="-O3 -lineinfo -fmad=false" LDFLAGS="$RPATH" build-sm90-nofma/firn \
    build-sm90-nofma/test_firn
# Synchronised after every launch (DEBUG_SYNC=1), so that a fault inside a
# kernel is reported at that kernel: gpu_check.sh reruns a step that failed
# with a CUDA error with these.
[[ $MAIN_ONLY == 1 ]] || make -j"$(nproc)" BUILD=build-sm90-debug CUDA_ARCH="-gencode arch=compute_90,code=sm_90" \
    DEBUG_SYNC=1 LDFLAGS="$RPATH" build-sm90-debug/firn build-sm90-debug/test_firn
rm -rf .gpu
mkdir -p .gpu/bin .gpu/lib
cp build-sm90/firn build-sm90/test_firn .gpu/bin/
if [[ $MAIN_ONLY != 1 ]]; then
    cp build-sm90-nofma/firn .gpu/bin/firn-nofma
    cp build-sm90-nofma/test_firn .gpu/bin/test_firn-nofma
    cp build-sm90-debug/firn .gpu/bin/firn-debug
    cp build-sm90-debug/test_firn .gpu/bin/test_firn-debug
fi
# Everything but the C/C++ runtime that every Linux image has.
ldd build-sm90/firn build-sm90/test_firn | awk '/=>/ { print $3 }' | sort -u |
    grep -vE '/(libc|libm|libdl|librt|libpthread|libresolv|libgcc_s|libstdc\+\+)\.so' |
    while read -r lib; do cp -L "$lib" .gpu/lib/; done
git rev-parse --short HEAD >.gpu/COMMIT
# What the binaries were built from, checked by gpu_check.sh against the tree
# it runs in (which may come without .git).
bench/source_hash.sh >.gpu/SOURCES
du -sh .gpu
echo "packed: carry .gpu in the device run"
