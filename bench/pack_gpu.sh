#!/usr/bin/env bash
# pack_gpu.sh - run HERE (a machine with the build dependencies) before a
# device session: builds firn and the test binary for Hopper (sm_90) and
# copies them, with the shared libraries the GPU machine's image lacks
# (cJSON, libpng, Criterion and its dependencies, libgomp), into .gpu/,
# which git ignores and the device tool carries (`carry: [".gpu"]`).
# bench/gpu_check.sh uses .gpu/ when it cannot build there.
#
# The device tool carries at most 64 MiB (working tree included), so the
# bundle must stay under PACK_LIMIT_MIB (default 60): the script fails,
# naming the size, when it does not. What keeps it small:
#   - device code in compressed fatbins (nvcc --compress-mode=size; about a
#     fifth of the uncompressed size);
#   - -lineinfo (Nsight Compute's source view) in build/firn only, the
#     binary the profiler runs; host code without -g;
#   - one binary for every run-time variant: the P2G variants, the grid
#     and graphs are flags, and synchronising after every launch is
#     FIRN_DEBUG_SYNC=1 in the environment (no separate debug build);
#   - the variant built without FMA in device code (firn-nofma,
#     test_firn-nofma: gpu_check.sh reruns a failed CPU/GPU comparison with
#     it, to tell rounding from a real difference); PACK_MAIN_ONLY=1 leaves
#     it out.
# PACK_ALLOW_DIRTY=1 packs uncommitted sources (make gpu-rehearsal measures
# the bundle's size so); the pack's COMMIT then ends in -dirty.
set -euo pipefail
cd "$(dirname "$0")/.."
LIMIT_MIB=${PACK_LIMIT_MIB:-60}
# The pack is tied to a commit: built from a tree whose sources differ from
# it, the device would test code that is in no commit. Where git cannot
# answer (a tree without .git, or one git refuses as another user's), the
# pack is named by its source hash alone (.gpu/SOURCES, which gpu_check.sh
# checks either way).
if COMMIT=$(git rev-parse --short HEAD 2>/dev/null); then
    if ! git diff --quiet HEAD -- Makefile host kernels include test ||
        [[ -n $(git status --porcelain --untracked-files=all -- Makefile host kernels include test) ]]; then
        if [[ ${PACK_ALLOW_DIRTY:-0} != 1 ]]; then
            echo "pack_gpu.sh: uncommitted changes under Makefile host kernels include test: commit first" >&2
            exit 1
        fi
        COMMIT="$COMMIT-dirty"
    fi
else
    echo "pack_gpu.sh: git gives no commit here ($(git rev-parse HEAD 2>&1 | head -n 1));" \
        "the pack is named by its source hash only" >&2
    COMMIT=nogit
fi
# The binaries find the packed libraries through their RPATH (which, unlike
# RUNPATH, also serves the libraries' own dependencies), from .gpu/bin or
# from build/: nothing else on the device sees them.
RPATH="-Wl,--disable-new-dtags,-rpath,'\$\$ORIGIN/../lib:\$\$ORIGIN/../.gpu/lib'"
ARCH="-gencode arch=compute_90,code=sm_90"
SMALL="--compress-mode=size"
JOBS=${PACK_JOBS:-$(nproc)}
build() { # dir nvccflags targets...
    local dir=$1 flags=$2
    shift 2
    rm -f "${@/#/$dir/}" # relink: make does not track LDFLAGS
    make -j"$JOBS" BUILD="$dir" CFLAGS="-O3" CUDA_ARCH="$ARCH" NVCCFLAGS="$flags" \
        LDFLAGS="$RPATH" "${@/#/$dir/}"
}
build build-sm90-prof "-O3 -lineinfo $SMALL" firn
build build-sm90 "-O3 $SMALL" test_firn
MAIN_ONLY=${PACK_MAIN_ONLY:-0}
[[ $MAIN_ONLY == 1 ]] || build build-sm90-nofma "-O3 -fmad=false $SMALL" firn test_firn
rm -rf .gpu
mkdir -p .gpu/bin .gpu/lib
cp build-sm90-prof/firn build-sm90/test_firn .gpu/bin/
if [[ $MAIN_ONLY != 1 ]]; then
    cp build-sm90-nofma/firn .gpu/bin/firn-nofma
    cp build-sm90-nofma/test_firn .gpu/bin/test_firn-nofma
fi
# Everything but the C/C++ runtime that every Linux image has.
ldd build-sm90-prof/firn build-sm90/test_firn | awk '/=>/ { print $3 }' | sort -u |
    grep -vE '/(libc|libm|libdl|librt|libpthread|libresolv|libgcc_s|libstdc\+\+)\.so' |
    while read -r lib; do cp -L "$lib" .gpu/lib/; done
echo "$COMMIT" >.gpu/COMMIT
# What the binaries were built from, checked by gpu_check.sh against the tree
# it runs in (which may come without .git).
bench/source_hash.sh >.gpu/SOURCES
echo "pack_gpu.sh: .gpu/ holds:"
(cd .gpu && find . -type f -printf '%s %p\n' | sort -rn |
    awk '{ printf "  %8.2f MiB  %s\n", $1 / 1048576, $2 }')
BYTES=$(du -sb .gpu | cut -f1)
MIB=$(awk -v b="$BYTES" 'BEGIN { printf "%.1f", b / 1048576 }')
if ((BYTES > LIMIT_MIB * 1048576)); then
    echo "pack_gpu.sh: the bundle is $MIB MiB, over the $LIMIT_MIB MiB limit (the device tool" \
        "carries 64 MiB with the working tree): it would not travel" >&2
    exit 1
fi
echo "pack_gpu.sh: bundle $MIB MiB ($BYTES bytes), within the $LIMIT_MIB MiB limit; commit $COMMIT"
echo "packed: carry .gpu in the device run"
