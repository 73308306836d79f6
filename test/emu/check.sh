#!/usr/bin/env bash
# check.sh - the CUDA code against the emulated runtime (make emu-check; CI):
# the GPU tests (none may skip), the emulator's self-tests, firn compare
# on every shipped scene, and a small firn bench on the emulated device.
# Prints a table of PASS/FAIL and seconds per step; exits non-zero if any
# step failed.
#
#   FIRN_EMU_FRAMES   frames per scene for firn compare (default 1)
set -u
cd "$(dirname "$0")/../.." || exit 1
FIRN=build/emu/firn
TESTS=build/emu/test_firn
FRAMES=${FIRN_EMU_FRAMES:-1}
# The CPU path's OpenMP threads would spin between regions and starve the
# emulator's block pool on a small machine.
export OMP_WAIT_POLICY=passive
LOG=$(mktemp -d /tmp/firn-emu-check.XXXXXX)
NAMES=() RESULTS=() TIMES=()
FAILED=0

step() { # NAME COMMAND...
    local name=$1 t0 t1 rc log
    shift
    log="$LOG/$(echo "$name" | tr -c 'A-Za-z0-9._-' '_').log"
    t0=$(date +%s.%N)
    "$@" >"$log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    NAMES+=("$name")
    TIMES+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')")
    if ((rc == 0)); then
        RESULTS+=(PASS)
    else
        RESULTS+=("FAIL (exit $rc)")
        FAILED=$((FAILED + 1))
        echo "### $name failed (exit $rc); the end of its log ($log):"
        tail -n 60 "$log"
    fi
}

step "GPU tests (test/test_gpu*.c)" env FIRN_BIN="$FIRN" "$TESTS" --filter 'gpu*/*' --jobs 1 --verbose
# --verbose lists the tests the filter left out as skipped too: only a
# gpu* test that skipped counts.
if grep -Eq '^\[SKIP\] gpu[a-z_]*::' "$LOG"/GPU_tests*.log; then
    RESULTS[0]="FAIL (a test skipped)"
    FAILED=$((FAILED + 1))
fi
# A self-test of the emulated runtime, test/emu/NAME.cu: built here against
# it with make emu's flags, then run.
emu_selftest() {
    "${CXX:-g++}" -std=c++17 -x c++ -O2 -g -fsanitize=address,undefined \
        -fno-sanitize-recover=undefined -fno-omit-frame-pointer -Wall -Wextra -DFIRN_EMU \
        -Itest/emu -include cuda_runtime.h "test/emu/$1.cu" -x none \
        build/emu/test/emu/runtime.o -lpthread -o "build/emu/$1" &&
        "build/emu/$1"
}
# The CUB stand-ins (test/emu/cub/) through the public CUB API.
step "CUB stand-ins (test/emu/cub_selftest.cu)" emu_selftest cub_selftest
# The model of shared atomics' conflicts (FIRN_EMU_PROFILE) on patterns
# whose passes and wavefronts are known by hand.
step "shared-atomic conflict model (test/emu/conflict_selftest.cu)" emu_selftest conflict_selftest
# The count of global-memory sectors per warp access (FIRN_EMU_PROFILE,
# make emu-sectors) on patterns whose coalescing is known by hand: the test
# and the runtime built by clang, the test's loads and stores traced.
sector_selftest() {
    local f=(-std=c++17 -x c++ -O2 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined
        -fno-omit-frame-pointer -Wall -Wextra -DFIRN_EMU -Itest/emu)
    clang++ "${f[@]}" -c test/emu/runtime.cpp -o build/emu/sector_runtime.o &&
        clang++ "${f[@]}" -fsanitize-coverage=func,trace-loads,trace-stores -include cuda_runtime.h \
            test/emu/sector_selftest.cu -x none build/emu/sector_runtime.o -lpthread \
            -o build/emu/sector_selftest &&
        build/emu/sector_selftest
}
step "global-memory sector count (test/emu/sector_selftest.cu)" sector_selftest
# A compare also fails here when a CUDA graph capture failed and the run
# fell back to kernel-by-kernel launches (firn_graph_mode auto).
compare_scene() {
    local out rc
    out=$("$FIRN" compare "$1" --frames "$FRAMES" 2>&1)
    rc=$?
    echo "$out"
    if grep -q "a capture failed" <<<"$out"; then
        return 1
    fi
    return $rc
}
for scene in scenes/*.json; do
    step "compare $(basename "$scene" .json), $FRAMES frame(s)" compare_scene "$scene"
done
# At the shipped scenes' sizes the default P2G (auto) is atomic; the binned one on the
# scenes of every MPM material and of the MPM-rigid pair, the warp-reduced one (its
# shuffles are slow to emulate: about two minutes) on the first, the ordered
# (deterministic) one and G2P2G on both.
for run in mixed:binned ball_in_sand:binned mixed:warp mixed:ordered ball_in_sand:ordered \
    mixed:g2p2g ball_in_sand:g2p2g; do
    scene=${run%%:*} variant=${run##*:}
    step "compare $scene, $FRAMES frame(s), $variant P2G" "$FIRN" compare "scenes/$scene.json" \
        --frames "$FRAMES" --p2g "$variant"
done
# The fixed-point tile (FIRN_P2G_TILE=fixed) of binned P2G and G2P2G.
step "compare mixed, $FRAMES frame(s), binned P2G, fixed-point tile" env FIRN_P2G_TILE=fixed \
    "$FIRN" compare scenes/mixed.json --frames "$FRAMES" --p2g binned
step "compare ball_in_sand, $FRAMES frame(s), g2p2g P2G, fixed-point tile" env \
    FIRN_P2G_TILE=fixed "$FIRN" compare scenes/ball_in_sand.json --frames "$FRAMES" --p2g g2p2g
# The particles moved into the bin order (FIRN_P2G_REORDER): every substep with
# G2P2G, every second one with binned P2G.
step "compare ball_in_sand, $FRAMES frame(s), g2p2g P2G, reorder every substep" env \
    FIRN_P2G_REORDER=1 "$FIRN" compare scenes/ball_in_sand.json --frames "$FRAMES" --p2g g2p2g
step "compare mixed, $FRAMES frame(s), binned P2G, reorder every 2 substeps" env \
    FIRN_P2G_REORDER=2 "$FIRN" compare scenes/mixed.json --frames "$FRAMES" --p2g binned
step "compare sand_column, $FRAMES frame(s), binned P2G, sparse grid" "$FIRN" compare \
    scenes/sand_column.json --frames "$FRAMES" --p2g binned --grid sparse
step "bench --backend cuda (sand_block, 2000 particles)" "$FIRN" bench --backend cuda \
    --particles 2000 --scenes sand_block --layout dense --substeps 5 --repeats 1 --warmup 5 \
    --json "$LOG/bench.json" --csv "$LOG/bench.csv"

echo
echo "| step (emulated CUDA runtime) | result | seconds |"
echo "|---|---|---|"
for i in "${!NAMES[@]}"; do
    echo "| ${NAMES[$i]} | ${RESULTS[$i]} | ${TIMES[$i]} |"
done
echo "logs: $LOG"
echo "emu-check: $((${#NAMES[@]} - FAILED)) passed, $FAILED failed"
((FAILED == 0))
