#!/usr/bin/env bash
# gpu_check.sh - the one prepared check for a machine with a CUDA GPU (built
# for the H200, sm_90). Run from anywhere; it works in the repository root.
#
#   bench/gpu_check.sh            all sections, at most GPU_CHECK_BUDGET s (default 420)
#   GPU_CHECK_SECTIONS="speed heavy" bench/gpu_check.sh   only those sections
#   GPU_CHECK_PREBUILT=1 ...      use the binaries in .gpu/ (bench/pack_gpu.sh) even where make could build
#
# Sections, in order of what matters most when the budget cuts the run:
#   correct: build (or the pack from bench/pack_gpu.sh), the GPU tests (the
#            CPU tests run in CI; GPU_CHECK_FULL_SUITE=1 runs them all), firn
#            info, firn compare (GPU against CPU) on every scene of scenes/,
#            compute-sanitizer memcheck on one frame of four scenes that
#            between them launch every MPM, SPH and coupling kernel, plus a
#            short DFSPH bench and the binned and warp P2G, racecheck on
#            three, firn compare with the binned, warp and ordered P2G, and
#            two --deterministic runs compared byte for byte;
#   speed:   firn bench on every MPM scene (100k, 1M, 8M) with the atomic,
#            binned and warp P2G, the ordered (deterministic) one beside
#            binned on the sand block (1M, 8M), and the 32M sand block with
#            all four;
#   profile: Nsight Compute's counters for binned P2G's kernels and the
#            warp-reduced P2G at 8M;
#   heavy:   the SPH dam break (WCSPH and DFSPH 100k, WCSPH 1M), PBD and
#            FEM benches (the implicit beam's in the logs only), the open
#            1025^3-node domain of scenes/large/ with the sparse and the
#            dense grid, and the 32M-particle scene run for two frames with
#            its output written.
# A compare that fails is rerun with device code built without FMA. With the
# variants bench/pack_gpu.sh built for this commit in .gpu/: the GPU tests,
# when they fail, are rerun without FMA and synchronised after every
# launch (DEBUG_SYNC=1, which names a faulting kernel), and so is the first
# compare that fails with a CUDA error (exit 6). A sanitizer that refuses the
# device (gVisor machines) is recorded as UNSUPPORTED, not as a failure.
# Each step runs under
# `timeout`; a failing step does not stop the others. The last thing printed
# is a markdown table of PASS/FAIL and seconds per step, also written to
# bench/results/gpu-check-<date>-<commit>.md. When $OUT is set (the device
# tool), everything printed goes to $OUT/console.txt and the steps' logs to
# one archive, $OUT/logs.tar.gz, rewritten as each step ends, so that a run
# cut short still brings them back; $OUT holds at most eight files (console,
# logs, report, three bench JSON - all MPM scenes, sand 32M, SPH - and one
# CSV), within the eight the device tool returns. Exits non-zero if any step failed.
set -u

cd "$(dirname "$0")/.." || exit 1

ARCH="-gencode arch=compute_90,code=sm_90"
BUDGET=${GPU_CHECK_BUDGET:-420} # seconds for all steps: well inside 8 minutes
SECTIONS=" ${GPU_CHECK_SECTIONS:-correct speed profile heavy} "
section() { [[ $SECTIONS == *" $1 "* ]]; }
FIRN=build/firn
START=$(date +%s)
TMP=$(mktemp -d /tmp/firn-gpu-check.XXXXXX)
LOGS=$TMP/logs
mkdir -p "$LOGS"
if [[ -n ${OUT:-} && -d ${OUT:-} ]]; then
    exec > >(tee -a "$OUT/console.txt") 2>&1
    TEE_PID=$!
fi

STEPS=()
RESULTS=()
SECONDS_TAKEN=()
FAILED=0

record() { # name result seconds
    STEPS+=("$1")
    RESULTS+=("$2")
    SECONDS_TAKEN+=("$3")
    case $2 in FAIL*) FAILED=$((FAILED + 1)) ;; esac
}

# The exit status of the last run_step (124/137: timeout), and its log.
LAST_RC=0
LAST_LOG=""

# run_step NAME TIMEOUT_S LINES_SHOWN_ON_PASS COMMAND...
run_step() {
    local name=$1 limit=$2 show=$3
    shift 3
    local left=$((BUDGET - ($(date +%s) - START)))
    if ((left < 5)); then
        LAST_RC=-1
        echo "### $name: not run, the ${BUDGET} s budget is spent"
        record "$name" "FAIL (not run: time budget spent)" 0
        return
    fi
    ((limit > left)) && limit=$left
    local log
    log="$LOGS/$(printf '%02d' ${#STEPS[@]})-$(echo "$name" | tr -c 'A-Za-z0-9._-' '_').log"
    echo "### $name (timeout ${limit}s): $*"
    local t0 t1 rc
    t0=$(date +%s.%N)
    timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
    rc=$?
    LAST_RC=$rc
    LAST_LOG=$log
    t1=$(date +%s.%N)
    local secs
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    local result
    if ((rc == 0)); then
        result=PASS
        ((show > 0)) && tail -n "$show" "$log"
    elif [[ $name == memcheck* || $name == racecheck* ]] && grep -q "Device not supported" "$log"; then
        result="UNSUPPORTED (compute-sanitizer: 'Device not supported' on this machine's runtime)"
        tail -n 5 "$log"
    else
        if ((rc == 124 || rc == 137)); then
            result="FAIL (timeout ${limit}s)"
        else
            result="FAIL (exit $rc)"
        fi
        tail -n 40 "$log"
    fi
    echo "### $name: $result in ${secs}s"
    echo
    record "$name" "$result" "$secs"
    archive_logs
}

# The logs as one file in $OUT (the device tool returns few files).
archive_logs() {
    [[ -n ${OUT:-} && -d ${OUT:-} ]] || return 0
    tar -czf "$OUT/.logs.tar.gz" -C "$TMP" logs && mv -f "$OUT/.logs.tar.gz" "$OUT/logs.tar.gz"
}

find_sanitizer() {
    local c
    for c in "$(command -v compute-sanitizer 2>/dev/null)" \
        /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
        [[ -n $c && -x $c ]] && { echo "$c"; return 0; }
    done
    return 1
}

GPU=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 1)
GPU=${GPU:-"unknown (nvidia-smi not available)"}
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo nogit)
SRC_HASH=$(bench/source_hash.sh)
DATE=$(date +%Y-%m-%d)
echo "firn GPU check: $DATE, commit $COMMIT, GPU: $GPU"
echo "nvcc: $(nvcc --version 2>/dev/null | tail -n 1 || echo 'not in PATH')"
echo

PREBUILT=0
# The device image may lack cJSON, libpng and Criterion and cannot install
# them: then use the binaries bench/pack_gpu.sh built and carried in .gpu/.
if [[ ${GPU_CHECK_PREBUILT:-0} != 1 ]] && pkg-config --exists libcjson libpng criterion 2>/dev/null; then
    run_step "build (sm_90)" 240 2 make CUDA_ARCH="$ARCH" -j16 all build/test_firn
elif [[ -x .gpu/bin/firn && -x .gpu/bin/test_firn ]]; then
    PREBUILT=1
    mkdir -p build
    # The binaries find .gpu/lib through their RPATH (pack_gpu.sh); an older
    # pack without it needs LD_LIBRARY_PATH, for everything run after.
    cp .gpu/bin/firn .gpu/bin/test_firn build/
    if ! build/firn --version >/dev/null 2>&1; then
        export LD_LIBRARY_PATH="$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    run_step "prebuilt sm_90 binaries from .gpu (commit $(cat .gpu/COMMIT 2>/dev/null))" 30 2 \
        build/firn --version
    # Built from this tree's sources? If not, the results are the pack's.
    # If so, and the tree came without .git, the pack names the commit.
    # (The device tool's copy of .git can be older than the tree it sends:
    # the pack's commit names what ran.)
    if [[ "$(cat .gpu/SOURCES 2>/dev/null)" == "$SRC_HASH" ]]; then
        COMMIT=$(cat .gpu/COMMIT 2>/dev/null || echo nogit)
    elif [[ "$(cat .gpu/SOURCES 2>/dev/null)" != "$SRC_HASH" ]]; then
        record "pack built from this tree's sources" \
            "FAIL (.gpu/ holds commit $(cat .gpu/COMMIT 2>/dev/null)'s binaries, other sources than these: results below are that pack's)" 0
        COMMIT="pack-$(cat .gpu/COMMIT 2>/dev/null)"
    fi
else
    record "build (sm_90)" "FAIL (no build dependencies here and no .gpu/: run bench/pack_gpu.sh first)" 0
fi
# The binaries pack_gpu.sh built beside the main ones, when carried.
# Only when the main binaries came from .gpu too, or .gpu was packed from
# these sources: a .gpu/ left from an older pack holds other code.
variant() { # name: prints .gpu/bin/<name>
    [[ -x .gpu/bin/$1 ]] || return 1
    [[ $PREBUILT == 1 || "$(cat .gpu/SOURCES 2>/dev/null)" == "$SRC_HASH" ]] && echo ".gpu/bin/$1"
}
# After a step failed with a CUDA error (exit 6): the same command with the
# DEBUG_SYNC build, which reports the kernel that faulted. Once per binary:
# one name is what it is for, and a device that fails every call would
# otherwise double every step.
DEBUG_DONE=" "
debug_rerun() { # name binary-name args...
    local name=$1 bin=$2
    shift 2
    local dbg
    [[ $DEBUG_DONE == *" $bin "* ]] && return 0
    DEBUG_DONE="$DEBUG_DONE$bin "
    dbg=$(variant "$bin-debug") || return 0
    run_step "$name, synchronised after every launch" 120 25 env FIRN_BIN=build/firn "$dbg" "$@"
}
# nvcc contracts a*b+c to FMA in device code, gcc (no -march) does not: a
# compare that fails is rerun with device code built without FMA, so that a
# difference of rounding (a plastic branch or a CPIC side test flipping) can
# be told from a real one.
NOFMA=""
nofma_firn() {
    if [[ -z $NOFMA ]] && variant firn-nofma >/dev/null; then
        NOFMA=$(variant firn-nofma)
    elif [[ -z $NOFMA ]] && pkg-config --exists libcjson libpng 2>/dev/null; then
        run_step "build firn without FMA (for a failed compare)" 200 1 make -j16 BUILD=build-nofma \
            CUDA_ARCH="$ARCH" NVCCFLAGS="-O3 -lineinfo -fmad=false" build-nofma/firn
        [[ -x build-nofma/firn ]] && NOFMA=build-nofma/firn
    fi
    [[ -n $NOFMA ]]
}

mkdir -p bench/results
RES=bench/results
[[ -n ${OUT:-} && -d ${OUT:-} ]] && RES=$OUT
export FIRN_COMMIT=$COMMIT # into the bench JSON
SAN=$(find_sanitizer)

if section correct; then
    # The CPU tests run in CI, on every commit; here the GPU tests (every
    # suite named gpu*), unless GPU_CHECK_FULL_SUITE=1.
    SUITE_FILTER=(--filter 'gpu*/*')
    SUITE_NAME="GPU tests"
    if [[ ${GPU_CHECK_FULL_SUITE:-0} == 1 ]]; then
        SUITE_NAME="test suite"
        SUITE_FILTER=()
        # bench/plot's tests need a Python with matplotlib, which the device
        # image may lack (and cannot install): then the suite runs without
        # them, and the table says so. CI runs them.
        if ! python3 -c 'import matplotlib' 2>/dev/null && ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
            SUITE_FILTER=(--filter '!(bench_plot/*)')
            record "bench/plot tests" "NOT RUN (no Python with matplotlib here)" 0
        fi
    fi
    run_step "$SUITE_NAME" 240 4 env FIRN_BIN=build/firn build/test_firn --jobs 1 --verbose \
        ${SUITE_FILTER[@]+"${SUITE_FILTER[@]}"}
    if [[ ${RESULTS[-1]} == FAIL* ]]; then
        # Rounding or a fault? The GPU tests again without FMA in device code,
        # then synchronised after every launch.
        if NF=$(variant test_firn-nofma); then
            run_step "GPU tests, device code without FMA" 120 4 env FIRN_BIN=build/firn "$NF" --jobs 1 \
                --filter 'gpu*/*'
        fi
        debug_rerun "GPU tests" test_firn --jobs 1 --filter 'gpu*/*'
    fi
    # Without a usable GPU the GPU tests skip and the suite still passes:
    # prove that they ran (they share one skip condition; this test shows it).
    run_step "GPU tests not skipped" 60 2 bash -c \
        "out=\$(build/test_firn --jobs 1 --verbose --filter 'gpu/device_describe' 2>&1 |
                 grep -E 'gpu::device_describe|Synthesis'); echo \"\$out\";
         grep -q '^\[PASS\] gpu::device_describe' <<<\"\$out\""
    run_step "firn info" 30 20 "$FIRN" info

    for scene in scenes/*.json; do
        name=$(basename "$scene" .json)
        run_step "compare $name (3 frames)" 60 25 "$FIRN" compare "$scene" --frames 3
        if ((LAST_RC == 6)); then
            debug_rerun "compare $name (3 frames)" firn compare "$scene" --frames 3
        elif ((LAST_RC > 0)) && nofma_firn; then
            run_step "compare $name (3 frames), device code without FMA" 60 25 "$NOFMA" compare \
                "$scene" --frames 3
        fi
    done

    # memcheck: between them these launch every kernel - each MPM material
    # (mixed), MPM-rigid (ball_in_sand), MPM-SPH (sph_snowball_pool),
    # SPH-rigid (sph_floating_box), MPM-PBD (pbd_cloth_snowball), the FEM
    # solver with FEM-MPM (fem_ball_sand), the implicit FEM solve
    # (fem_rubber_cantilever) and DFSPH (the bench's dam break).
    if [[ -z $SAN ]]; then
        record "memcheck" "FAIL (compute-sanitizer not found)" 0
    else
        for name in mixed ball_in_sand sph_snowball_pool sph_floating_box pbd_cloth_snowball \
            fem_ball_sand fem_rubber_cantilever; do
            run_step "memcheck $name (1 frame)" 60 3 "$SAN" --tool memcheck --leak-check full \
                --error-exitcode 1 "$FIRN" run "scenes/$name.json" --backend cuda --frames 1 \
                --quiet --out "$TMP/memcheck-$name"
        done
        run_step "memcheck DFSPH dam break (bench, 100k, 10 substeps)" 60 3 "$SAN" --tool memcheck \
            --error-exitcode 1 "$FIRN" bench --backend cuda --scenes sph_dam_break_dfsph \
            --layout dense --particles 100k --substeps 5 --warmup 5 --repeats 1 \
            --json "$TMP/memcheck-dfsph.json" --csv "$TMP/memcheck-dfsph.csv"
        for v in binned warp g2p2g; do
            run_step "memcheck ball_in_sand, $v P2G (1 frame)" 60 3 "$SAN" --tool memcheck \
                --error-exitcode 1 "$FIRN" run scenes/ball_in_sand.json --backend cuda --frames 1 \
                --p2g "$v" --quiet --out "$TMP/memcheck-$v"
        done
        # racecheck: binned P2G's shared-memory tile (its zeroing, scatter and flush
        # between barriers), the warp-reduced one's, and the SPH kernels.
        for run in ball_in_sand:binned ball_in_sand:warp ball_in_sand:g2p2g sph_snowball_pool:binned; do
            name=${run%%:*} v=${run##*:}
            run_step "racecheck $name (1 frame, $v P2G)" 90 3 "$SAN" --tool racecheck \
                --error-exitcode 1 "$FIRN" run "scenes/$name.json" --backend cuda --frames 1 \
                --p2g "$v" --quiet --out "$TMP/racecheck-$name-$v"
        done
    fi
    # The deterministic mode on hardware: two runs of a sand scene with
    # --deterministic write the same bytes (the PLY of the last frame);
    # two runs with the default P2G are reported, not required to differ.
    run_step "deterministic: two runs of sand_column (5 frames) byte-identical" 60 4 bash -c \
        "for r in 1 2; do '$FIRN' run scenes/sand_column.json --backend cuda --deterministic \
             --frames 5 --quiet --out '$TMP/det\$r' || exit 1; done &&
         cmp '$TMP/det1/frame_00005.ply' '$TMP/det2/frame_00005.ply' && echo identical &&
         for r in 1 2; do '$FIRN' run scenes/sand_column.json --backend cuda --frames 5 --quiet \
             --out '$TMP/atomic\$r' || exit 1; done;
         cmp -s '$TMP/atomic1/frame_00005.ply' '$TMP/atomic2/frame_00005.ply' &&
             echo 'atomic P2G: identical too' || echo 'atomic P2G: the two runs differ'"
    # The shipped scenes are below auto's threshold (atomic P2G): binned, warp and
    # ordered too.
    for v in binned warp ordered g2p2g; do
        for name in mixed ball_in_sand sand_column; do
            run_step "compare $name (3 frames), $v P2G" 60 25 "$FIRN" compare \
                "scenes/$name.json" --frames 3 --p2g "$v"
        done
    done
fi

if section speed; then
    # Throughput of both P2G variants, kept as JSON. Written straight to
    # $OUT when set: firn bench rewrites its files after every case, so a
    # timeout keeps the cases that finished.
    run_step "bench MPM scenes 100k-8M, atomic, binned, warp and g2p2g P2G (cuda)" 240 60 "$FIRN" bench \
        --backend cuda --particles 100k,1m,8m --p2g atomic,binned,warp,g2p2g \
        --json "$RES/h200-$DATE.json" --csv "$RES/h200-$DATE.csv"
    # The deterministic (ordered) P2G beside binned, on the sand block.
    run_step "bench sand 1M and 8M, binned and ordered P2G (cuda)" 120 12 "$FIRN" bench \
        --backend cuda --scenes sand_block --layout dense --particles 1m,8m \
        --p2g binned,ordered --json "$TMP/ordered.json" --csv "$TMP/ordered.csv"
    # CUDA graphs against kernel-by-kernel launches where launches cost the
    # most (small scenes), off and on interleaved twice.
    run_step "bench sand and SPH 20k, 100k, --graphs off / on interleaved (cuda)" 150 40 bash -c \
        "for r in 1 2; do for g in off on; do echo \"--- graphs \$g (round \$r)\";
             '$FIRN' bench --backend cuda --scenes sand_block,sph_dam_break --layout dense \
                 --particles 20k,100k --p2g atomic --graphs \$g --substeps 100 --warmup 100 \
                 --json '$TMP/graphs-\$g-\$r.json' --csv '$TMP/graphs-\$g-\$r.csv' || exit 1;
         done; done"
    run_step "bench sand 32M, every P2G variant (cuda)" 150 12 "$FIRN" bench --backend cuda \
        --scenes sand_block --layout dense --particles 32m --p2g atomic,binned,warp,ordered,g2p2g \
        --json "$RES/h200-$DATE-sand32.json" --csv "$TMP/sand32.csv"
fi

# Hardware counters (Nsight Compute; Firecracker machines have them) for
# binned P2G's kernels at 8M particles: speed of light, occupancy, launch.
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
if section profile && [[ -n $NCU ]]; then
    run_step "ncu: binned P2G's kernels, sand 8M" 120 60 "$NCU" --clock-control none \
        --kernel-name regex:'p2g|g2p|bin_|Radix|grid_update' --launch-skip 40 --launch-count 10 \
        --section SpeedOfLight --section Occupancy --section LaunchStats "$FIRN" bench \
        --backend cuda --scenes sand_block --layout dense --particles 8m --p2g binned \
        --substeps 5 --warmup 10 --repeats 1 --json "$TMP/ncu.json" --csv "$TMP/ncu.csv"
    run_step "ncu: p2g_warp, sand 8M" 90 40 "$NCU" --clock-control none --kernel-name p2g_warp \
        --launch-skip 5 --launch-count 1 --section SpeedOfLight --section Occupancy \
        --section LaunchStats "$FIRN" bench --backend cuda --scenes sand_block --layout dense \
        --particles 8m --p2g warp --substeps 5 --warmup 10 --repeats 1 \
        --json "$TMP/ncu-warp.json" --csv "$TMP/ncu-warp.csv"
fi

if section heavy; then
    # SPH: DFSPH at 1M runs past two minutes (its iterations grow with
    # resolution), so 100k for both solvers and 1M for WCSPH.
    run_step "bench SPH dam break WCSPH and DFSPH 100k (cuda)" 120 10 "$FIRN" bench --backend cuda \
        --scenes sph_dam_break,sph_dam_break_dfsph --layout dense --particles 100k \
        --substeps 20 --warmup 100 --json "$RES/h200-$DATE-sph.json" --csv "$TMP/sph.csv"
    run_step "bench SPH dam break WCSPH 1M (cuda)" 120 10 "$FIRN" bench --backend cuda \
        --scenes sph_dam_break --layout dense --particles 1m --substeps 20 --warmup 100 \
        --json "$TMP/sph1m.json" --csv "$TMP/sph1m.csv"
    # PBD cloth and liquid, and the explicit FEM beam (elements), never timed on a GPU yet.
    run_step "bench pbd_cloth, pbd_liquid, fem_beam 100k and 1M (cuda)" 150 10 "$FIRN" bench \
        --backend cuda --scenes pbd_cloth,pbd_liquid,fem_beam --layout dense --particles 100k,1m \
        --substeps 20 --warmup 50 --json "$RES/h200-$DATE-pbd-fem.json" --csv "$TMP/pbd-fem.csv"
    # The implicit beam: Newton and CG per substep, one host round trip per CG batch.
    run_step "bench fem_beam_implicit 20k and 100k elements (cuda)" 120 10 "$FIRN" bench \
        --backend cuda --scenes fem_beam_implicit --layout dense --particles 20k,100k \
        --substeps 5 --warmup 5 --json "$TMP/fem-implicit.json" \
        --csv "$TMP/fem-implicit.csv"
    # The open domain (1025^3 nodes, 1M particles): the sparse grid against
    # the dense one, 2 frames each (the log's simulate time and phases).
    for g in sparse dense; do
        run_step "large open domain: sand_open_1024, 2 frames, --grid $g (cuda)" 90 8 \
            "$FIRN" run scenes/large/sand_open_1024.json --backend cuda --grid "$g" --frames 2 \
            --every 100 --out "$TMP/open-$g"
    done
    # The large scene runs and writes its frames (1.06 GB of PLY each); the
    # log keeps the memory line and the simulate / write split.
    run_step "large scene: sand_slump_32m, 2 frames (cuda)" 120 6 bash -c \
        "'$FIRN' run scenes/large/sand_slump_32m.json --backend cuda --frames 2 --every 1 --out '$TMP/large' &&
         ls -l '$TMP/large' && rm -rf '$TMP/large'"
fi

TOTAL=$(($(date +%s) - START))
REPORT="$TMP/report.md"
{
    echo "## firn GPU check, $DATE, commit $COMMIT"
    echo
    echo "GPU: $GPU"
    echo
    echo "| step | result | seconds |"
    echo "| --- | --- | ---: |"
    for i in "${!STEPS[@]}"; do
        echo "| ${STEPS[$i]} | ${RESULTS[$i]} | ${SECONDS_TAKEN[$i]} |"
    done
    echo
    echo "Total ${TOTAL} s; $FAILED step(s) failed."
} >"$REPORT"

# Into $OUT on the device tool (its tree does not come back), else into
# bench/results/ to be committed.
if [[ -n ${OUT:-} && -d ${OUT:-} ]]; then
    cp "$REPORT" "$OUT/gpu-check-$DATE-$COMMIT.md"
else
    mkdir -p bench/results
    cp "$REPORT" "bench/results/gpu-check-$DATE-$COMMIT.md"
fi

cat "$REPORT"
rm -rf "$TMP"
# Let tee write the last lines to console.txt before the script ends.
if [[ -n ${TEE_PID:-} ]]; then
    exec >&- 2>&-
    wait "$TEE_PID" 2>/dev/null
fi
((FAILED == 0))
