#!/usr/bin/env bash
# gpu_check.sh MODE - the prepared check for a machine with a CUDA GPU (built
# for Hopper, sm_90), in calls that each fit one command of a short device
# window (docs/BENCH.md, "The GPU check"):
#
#   bench/gpu_check.sh speed     call A: throughput first (at most 270 s)
#   bench/gpu_check.sh correct   call B: GPU against CPU, sanitizers (at most 300 s)
#   bench/gpu_check.sh heavy     call C, when time is left: large scenes, the
#                                full matrix, the other solvers' benches
#
#   GPU_CHECK_TIMEOUT   the call's timeout in seconds (default speed 290,
#                       correct 320, heavy 600)
#   GPU_CHECK_BUDGET    seconds for all steps (default the timeout less 20):
#                       each step gets at most what is left, and a step that
#                       would start with under 5 s left is recorded as not run
#   GPU_CHECK_BUILD=1   build here even when .gpu/ holds binaries
#                       (bench/pack_gpu.sh's, used when present)
#   GPU_CHECK_REHEARSAL=1 the same steps in the same order on the emulated
#                       runtime (build/emu, make gpu-rehearsal), scaled down:
#                       small particle counts, few substeps, the profiler
#                       replaced by the emulator's counts (FIRN_EMU_PROFILE),
#                       the sanitizers by the build's ASan and UBSan
#
# Results are written as they come: after every step the report (markdown),
# one JSON with every figure so far and the logs' archive are rewritten, so a
# call cut off at any point still brings back every finished step. With
# $OUT set (the device tool) they go to $OUT, four files, no folder:
# console-MODE.txt, report-MODE.md, figures-MODE.json, logs-MODE.tar.gz;
# else to bench/results/gpu-check-DATE-COMMIT-MODE.{md,json}.
#
# Each step carries an estimate of its seconds on an H200, from the runs of
# 2026-12-04 (bench/results/h200-2026-12-04*.md); the plan (printed first,
# and in the report) is each step's share of the call's budget. Exits
# non-zero if any step failed.
set -u

cd "$(dirname "$0")/.." || exit 1

MODE=${1:-${GPU_CHECK_MODE:-}}
case $MODE in
speed) DEFAULT_TIMEOUT=290 ;;
correct) DEFAULT_TIMEOUT=320 ;;
heavy) DEFAULT_TIMEOUT=600 ;;
*)
    echo "usage: bench/gpu_check.sh speed|correct|heavy (got '${MODE}')" >&2
    exit 2
    ;;
esac
TIMEOUT=${GPU_CHECK_TIMEOUT:-$DEFAULT_TIMEOUT}
PLAN_BUDGET=$((TIMEOUT - 20))
BUDGET=${GPU_CHECK_BUDGET:-$PLAN_BUDGET}
REHEARSAL=${GPU_CHECK_REHEARSAL:-0}
if [[ $REHEARSAL == 1 ]]; then
    # Emulated steps run far slower than the GPU's: the plan is checked
    # against the call's budget, the wall clock against a generous one.
    BUDGET=${GPU_CHECK_BUDGET:-3600}
    export OMP_WAIT_POLICY=passive
fi
START=$(date +%s)
TMP=$(mktemp -d /tmp/firn-gpu-check.XXXXXX)
LOGS=$TMP/logs
mkdir -p "$LOGS"
if [[ -n ${OUT:-} && -d ${OUT:-} ]]; then
    exec > >(tee -a "$OUT/console-$MODE.txt") 2>&1
    TEE_PID=$!
fi

# The steps so far, one tab-separated line each (bench/gpu_figures.py reads
# it): index, name, kind, result, seconds, estimate, log, figure file.
STEPS_TSV=$TMP/steps.tsv
: >"$STEPS_TSV"
NSTEPS=0
FAILED=0
LAST_RC=0
LAST_LOG=""

record() { # name kind result seconds estimate log figure
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$NSTEPS" "$1" "$2" "$3" "$4" "$5" "$6" "$7" \
        >>"$STEPS_TSV"
    NSTEPS=$((NSTEPS + 1))
    case $3 in FAIL*) FAILED=$((FAILED + 1)) ;; esac
    publish
}

# step NAME KIND CAP EST FIGURE -- COMMAND...
#   KIND: what the figure is (bench, ncu, emu-profile, tests, compare,
#   sanitizer, info, det); CAP: the step's own limit (s); EST: its seconds
#   on an H200; FIGURE: the file its figure is read from ('-': its log).
step() {
    local name=$1 kind=$2 cap=$3 est=$4 fig=$5
    shift 6
    local left=$((BUDGET - ($(date +%s) - START)))
    local log
    log="$LOGS/$(printf '%02d' "$NSTEPS")-$(echo "$name" | tr -c 'A-Za-z0-9._-' '_' | cut -c1-80).log"
    if ((left < 5)); then
        LAST_RC=-1
        echo "### $name: not run, the ${BUDGET} s budget is spent"
        record "$name" "$kind" "NOT RUN (budget spent)" 0 "$est" "" "-"
        return
    fi
    local limit=$cap
    # Emulated, a step runs tens of times slower than on a GPU.
    [[ $REHEARSAL == 1 ]] && limit=$((cap * 10))
    ((limit > left)) && limit=$left
    echo "### $name (limit ${limit}s, H200 estimate ${est}s): $*"
    local t0 t1 rc
    t0=$(date +%s.%N)
    timeout --kill-after=5 "$limit" "$@" >"$log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    LAST_RC=$rc
    LAST_LOG=$log
    local secs result
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    if ((rc == 0)); then
        result=PASS
        tail -n 3 "$log"
    elif [[ $kind == sanitizer ]] && grep -q "Device not supported" "$log"; then
        result="UNSUPPORTED (compute-sanitizer: 'Device not supported' on this runtime)"
        tail -n 5 "$log"
    else
        if ((rc == 124 || rc == 137)); then
            result="FAIL (timeout ${limit}s)"
        else
            result="FAIL (exit $rc)"
        fi
        tail -n 30 "$log"
    fi
    echo "### $name: $result in ${secs}s"
    echo
    record "$name" "$kind" "$result" "$secs" "$est" "$log" "$fig"
}

# A result written by the script itself (no command).
note() { # name kind result
    record "$1" "$2" "$3" 0 0 "" "-"
}
# A device step the rehearsal leaves out, recorded with its estimate.
skipped() { # name kind estimate why
    record "$1" "$2" "REHEARSAL: not run ($4)" 0 "$3" "" "-"
}

# The report, the figures and the logs, rewritten after every step.
publish() {
    local base
    if [[ -n ${OUT:-} && -d ${OUT:-} ]]; then
        base=$OUT
        tar -czf "$TMP/logs.tar.gz" -C "$TMP" logs steps.tsv 2>/dev/null &&
            mv -f "$TMP/logs.tar.gz" "$OUT/logs-$MODE.tar.gz"
        REPORT="$OUT/report-$MODE.md" FIGURES="$OUT/figures-$MODE.json"
    else
        REPORT="bench/results/gpu-check-$DATE-$COMMIT-$MODE.md"
        FIGURES="bench/results/gpu-check-$DATE-$COMMIT-$MODE.json"
    fi
    if ! "$PY" bench/gpu_figures.py report --steps "$STEPS_TSV" --mode "$MODE" \
        --date "$DATE" --commit "$COMMIT" --gpu "$GPU" --budget "$PLAN_BUDGET" \
        --rehearsal "$REHEARSAL" --elapsed $(($(date +%s) - START)) \
        --markdown "$REPORT.tmp" --json "$FIGURES.tmp" 2>"$TMP/figures.err"; then
        # Without Python the table still comes back.
        {
            echo "## firn GPU check ($MODE), $DATE, commit $COMMIT"
            echo
            echo "GPU: $GPU (bench/gpu_figures.py failed: $(tail -n 1 "$TMP/figures.err"))"
            echo
            echo "| step | result | seconds |"
            echo "| --- | --- | ---: |"
            awk -F'\t' '{ printf "| %s | %s | %s |\n", $2, $4, $5 }' "$STEPS_TSV"
        } >"$REPORT.tmp"
        rm -f "$FIGURES.tmp"
    fi
    mv -f "$REPORT.tmp" "$REPORT"
    [[ -f $FIGURES.tmp ]] && mv -f "$FIGURES.tmp" "$FIGURES"
    return 0
}

# ---- sizes: the GPU's, or the rehearsal's scaled down ----------------------
# n COUNT: a --particles value (k/m suffixes), scaled down in the rehearsal.
n() {
    if [[ $REHEARSAL != 1 ]]; then
        echo "$1"
        return
    fi
    local out="" v
    for v in ${1//,/ }; do
        case $v in
        20k | 100k) v=3k ;;
        1m) v=6k ;;
        8m) v=10k ;;
        32m) v=14k ;;
        esac
        out=${out:+$out,}$v
    done
    echo "$out"
}
# timing WARMUP SUBSTEPS REPEATS: firn bench's timing options.
timing() {
    if [[ $REHEARSAL == 1 ]]; then
        echo "--warmup 1 --substeps 2 --repeats 1"
    else
        echo "--warmup $1 --substeps $2 --repeats $3"
    fi
}

# ---- the binaries ------------------------------------------------------------
PY=$(command -v python3 || echo python3)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo nogit)
SRC_HASH=$(bench/source_hash.sh)
DATE=$(date +%Y-%m-%d)
if [[ $REHEARSAL == 1 ]]; then
    GPU="emulated (test/emu, rehearsal)"
else
    GPU=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 1)
    GPU=${GPU:-"unknown (nvidia-smi not available)"}
fi
echo "firn GPU check ($MODE): $DATE, commit $COMMIT, GPU: $GPU, budget ${BUDGET}s" \
    "(plan ${PLAN_BUDGET}s)"
echo

FIRN=build/firn
TESTS=build/test_firn
PREBUILT=0
if [[ $REHEARSAL == 1 ]]; then
    FIRN=build/emu/firn
    TESTS=build/emu/test_firn
    [[ -x $FIRN && -x $TESTS ]] || { echo "gpu_check.sh: run make emu first" >&2; exit 1; }
elif [[ ${GPU_CHECK_BUILD:-0} == 1 ]] || [[ ! -x .gpu/bin/firn || ! -x .gpu/bin/test_firn ]] &&
    pkg-config --exists libcjson libpng criterion 2>/dev/null; then
    # Building costs minutes of the window: the pack is preferred.
    step "build (sm_90)" info 240 60 - -- make CUDA_ARCH="-gencode arch=compute_90,code=sm_90" \
        -j16 all build/test_firn
elif [[ -x .gpu/bin/firn && -x .gpu/bin/test_firn ]]; then
    PREBUILT=1
    mkdir -p build
    cp .gpu/bin/firn .gpu/bin/test_firn build/
    # The binaries find .gpu/lib through their RPATH (pack_gpu.sh).
    if ! build/firn --version >/dev/null 2>&1; then
        export LD_LIBRARY_PATH="$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    # Built from this tree's sources? If not, the results are the pack's.
    # (The device tool's copy of .git can be older than the tree it sends:
    # the pack's commit names what ran.)
    if [[ "$(cat .gpu/SOURCES 2>/dev/null)" == "$SRC_HASH" ]]; then
        COMMIT=$(cat .gpu/COMMIT 2>/dev/null || echo nogit)
    else
        note "pack built from this tree's sources" info \
            "FAIL (.gpu/ holds commit $(cat .gpu/COMMIT 2>/dev/null)'s binaries, other sources than these: results below are that pack's)"
        COMMIT="pack-$(cat .gpu/COMMIT 2>/dev/null)"
    fi
else
    note "build (sm_90)" info "FAIL (no build dependencies here and no .gpu/: run bench/pack_gpu.sh first)"
fi
export FIRN_COMMIT=$COMMIT # into the bench JSON

# The variant built without FMA in device code, carried in .gpu/ (for a
# failed comparison: rounding or a real difference?).
nofma() { # binary name: prints its path
    [[ $REHEARSAL != 1 && -x .gpu/bin/$1-nofma ]] || return 1
    [[ $PREBUILT == 1 || "$(cat .gpu/SOURCES 2>/dev/null)" == "$SRC_HASH" ]] && echo ".gpu/bin/$1-nofma"
}
# After a step failed with a CUDA error (exit 6), once: the same command
# synchronised after every launch, which names the kernel that faulted.
DEBUG_DONE=0
debug_rerun() { # name kind command...
    local name=$1 kind=$2
    shift 2
    ((DEBUG_DONE)) && return 0
    DEBUG_DONE=1
    step "$name, synchronised after every launch" "$kind" 60 5 - -- env FIRN_DEBUG_SYNC=1 "$@"
}
# A comparison step, with its reruns when it fails.
compare_step() { # name est firn-compare-args...
    local name=$1 est=$2
    shift 2
    step "$name" compare 60 "$est" - -- "$FIRN" compare "$@"
    if ((LAST_RC == 6)); then
        debug_rerun "$name" compare "$FIRN" compare "$@"
    elif ((LAST_RC > 0 && LAST_RC != 124 && LAST_RC != 137)) && NF=$(nofma firn); then
        step "$name, device code without FMA" compare 60 "$est" - -- "$NF" compare "$@"
    fi
}

# The profiler (Nsight Compute), or in the rehearsal the emulator's counts.
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer \
    /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -n 1)
# Counters of P2G that Nsight Compute reads of one launch (gpu_figures.py
# turns them into per-particle figures): time, instructions (warp and
# thread), shared-memory atomics and the wavefronts they took (a wavefront
# beyond the first of an instruction is a replay), bank conflicts, L2
# reductions (global atomics without return), achieved occupancy, registers.
NCU_METRICS=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__thread_inst_executed.sum
NCU_METRICS+=,smsp__sass_inst_executed_op_shared_atom.sum
NCU_METRICS+=,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum
NCU_METRICS+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
NCU_METRICS+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
NCU_METRICS+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
NCU_METRICS+=,lts__t_requests_op_red.sum,lts__t_sectors_op_red.sum
NCU_METRICS+=,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread
NCU_METRICS+=,launch__occupancy_limit_registers,sm__maximum_warps_per_active_cycle_pct
# Whether to ask for the named metrics: after a run that failed on one (an
# older Nsight Compute), the rest run with the sections alone.
NCU_NAMED=1
# profile VARIANT KERNEL EST: one launch of KERNEL at 8M sand (the third).
profile() {
    local v=$1 kernel=$2 est=$3
    local fig="$LOGS/profile-$v"
    local bench=("$FIRN" bench --backend cuda --scenes sand_block --layout dense
        --particles "$(n 8m)" --p2g "$v" --graphs off $(timing 3 3 1)
        --json "$fig.bench.json" --csv "$fig.bench.csv")
    if [[ $REHEARSAL == 1 ]]; then
        rm -f "$fig.emu.tsv"
        step "profile $kernel ($v P2G), sand $(n 8m), emulator's counts" emu-profile 60 "$est" \
            "$fig.emu.tsv" -- env FIRN_EMU_PROFILE="$fig.emu.tsv" "${bench[@]}"
    elif [[ -z $NCU ]]; then
        note "ncu $kernel ($v P2G)" ncu "FAIL (Nsight Compute not found)"
    else
        # The named metrics and the sections that read the same units; if
        # this Nsight Compute lacks a metric, the sections alone.
        local sections=(--section LaunchStats --section Occupancy --section SpeedOfLight
            --section MemoryWorkloadAnalysis_Tables --section InstructionStats)
        local run=(--clock-control none --kernel-name "regex:^$kernel(<.*>)?\$" --launch-skip 2
            --launch-count 1 -f -o "$fig")
        # Profile, then the report's raw page as CSV (the figure).
        local export=(bash -c '"$0" "$@" && "$0" -i "$FIG.ncu-rep" --csv --page raw \
            --print-units base >"$FIG.csv"')
        if ((NCU_NAMED)); then
            step "ncu $kernel ($v P2G), sand 8M, one launch" ncu 60 "$est" "$fig.csv" -- \
                env FIG="$fig" "${export[@]}" "$NCU" "${run[@]}" --metrics "$NCU_METRICS" \
                "${sections[@]}" "${bench[@]}"
            ((LAST_RC != 0)) && grep -qi "metric" "$LAST_LOG" && NCU_NAMED=0
        fi
        if ((!NCU_NAMED)); then
            step "ncu $kernel ($v P2G), sand 8M, one launch, sections only" ncu 60 "$est" \
                "$fig.csv" -- env FIG="$fig" "${export[@]}" "$NCU" "${run[@]}" "${sections[@]}" \
                "${bench[@]}"
        fi
    fi
}
# sanitize TOOL NAME EST COMMAND...: compute-sanitizer, or in the rehearsal
# the command itself (the emulated build runs under ASan and UBSan).
sanitize() {
    local tool=$1 name=$2 est=$3
    shift 3
    if [[ $REHEARSAL == 1 ]]; then
        # The kernels the memcheck runs launch, for make gpu-rehearsal's
        # check that they are every kernel.
        local prof=()
        [[ $tool == memcheck ]] && prof=(env FIRN_EMU_PROFILE="$LOGS/memcheck-kernels.tsv")
        step "$tool $name (emulated: ASan and UBSan)" sanitizer 120 "$est" - -- "${prof[@]}" "$@"
    elif [[ -z $SAN ]]; then
        note "$tool $name" sanitizer "FAIL (compute-sanitizer not found)"
    else
        local extra=()
        [[ $tool == memcheck ]] && extra=(--leak-check full)
        step "$tool $name" sanitizer 120 "$est" - -- "$SAN" --tool "$tool" "${extra[@]}" \
            --error-exitcode 1 "$@"
    fi
}

# ---- call A: speed -----------------------------------------------------------
# H200 estimates (2026-12-04): a bench case costs its substeps (warm-up and
# timed) at the measured ms per substep plus about 0.5 s to build an 8M
# world, 3.5 s at 32M; sand 8M: atomic 9.0 ms a substep, binned 4.3 (warp,
# g2p2g: as binned; ordered: guessed at three times binned); an ncu run of
# one launch at 8M about 7 s; a compare of one frame about 1 s.
if [[ $MODE == speed ]]; then
    step "nvidia-smi" info 20 1 - -- bash -c \
        "if [[ '$REHEARSAL' == 1 ]]; then echo 'rehearsal: the emulated device (no nvidia-smi)'; else nvidia-smi; fi"
    step "firn info" info 20 1 - -- "$FIRN" info
    # Gates: one frame of every material against the CPU with each P2G;
    # recorded, the speed steps run whatever they say.
    GATE=scenes/mixed.json
    # Small in the rehearsal: the warp P2G's shuffles emulate slowly.
    [[ $REHEARSAL == 1 ]] && GATE=bench/check_scenes/check_mpm_small.json
    for v in atomic binned warp ordered g2p2g; do
        compare_step "gate: compare $(basename "$GATE" .json) (1 frame), $v P2G" 2 "$GATE" \
            --frames 1 --p2g "$v"
    done
    step "bench sand $(n 8m) dense, every P2G variant" bench 120 40 "$LOGS/sand8m.json" -- \
        "$FIRN" bench --backend cuda --scenes sand_block --layout dense --particles "$(n 8m)" \
        --p2g atomic,binned,warp,ordered,g2p2g $(timing 300 100 3) \
        --json "$LOGS/sand8m.json" --csv "$LOGS/sand8m.csv"
    # The counting sort against CUB's radix sort, binned P2G at 8M.
    step "bench sand $(n 8m) dense, binned P2G on the radix sort (FIRN_BIN_SORT=radix)" bench 60 8 \
        "$LOGS/sand8m-radix.json" -- env FIRN_BIN_SORT=radix "$FIRN" bench --backend cuda \
        --scenes sand_block --layout dense --particles "$(n 8m)" --p2g binned $(timing 300 100 3) \
        --json "$LOGS/sand8m-radix.json" --csv "$LOGS/sand8m-radix.csv"
    # The fixed-point tile against the float one (binned and G2P2G P2G at 8M):
    # its gate against the CPU, then the timing.
    step "gate: compare $(basename "$GATE" .json) (1 frame), binned P2G, fixed-point tile" \
        compare 60 2 - -- env FIRN_P2G_TILE=fixed "$FIRN" compare "$GATE" --frames 1 --p2g binned
    step "bench sand $(n 8m) dense, binned and g2p2g P2G, fixed-point tile (FIRN_P2G_TILE=fixed)" \
        bench 60 8 "$LOGS/sand8m-fixed.json" -- env FIRN_P2G_TILE=fixed "$FIRN" bench \
        --backend cuda --scenes sand_block --layout dense --particles "$(n 8m)" \
        --p2g binned,g2p2g $(timing 300 100 3) \
        --json "$LOGS/sand8m-fixed.json" --csv "$LOGS/sand8m-fixed.csv"
    # The particles moved into the bin order every substep (FIRN_P2G_REORDER=1)
    # against the same variants without (above): its gate, then the timing.
    step "gate: compare $(basename "$GATE" .json) (1 frame), g2p2g P2G, reorder (FIRN_P2G_REORDER=1)" \
        compare 60 2 - -- env FIRN_P2G_REORDER=1 "$FIRN" compare "$GATE" --frames 1 --p2g g2p2g
    step "bench sand $(n 8m) dense, binned, warp and g2p2g P2G, reorder every substep (FIRN_P2G_REORDER=1)" \
        bench 60 12 "$LOGS/sand8m-reorder.json" -- env FIRN_P2G_REORDER=1 "$FIRN" bench \
        --backend cuda --scenes sand_block --layout dense --particles "$(n 8m)" \
        --p2g binned,warp,g2p2g $(timing 300 100 3) \
        --json "$LOGS/sand8m-reorder.json" --csv "$LOGS/sand8m-reorder.csv"
    profile atomic p2g 7
    profile binned p2g_binned 7
    profile warp p2g_warp 7
    profile ordered p2g_ordered 8
    profile g2p2g g2p2g 7
    step "bench dam_break and snowball $(n 8m), binned, warp and g2p2g P2G" bench 90 24 \
        "$LOGS/mpm8m.json" -- "$FIRN" bench --backend cuda --scenes dam_break,snowball \
        --layout dense --particles "$(n 8m)" --p2g binned,warp,g2p2g $(timing 300 100 3) \
        --json "$LOGS/mpm8m.json" --csv "$LOGS/mpm8m.csv"
    step "bench sand $(n 1m) and $(n 100k), every P2G variant" bench 60 10 "$LOGS/sand1m.json" -- \
        "$FIRN" bench --backend cuda --scenes sand_block --layout dense \
        --particles "$(n 100k),$(n 1m)" --p2g all $(timing 300 100 3) \
        --json "$LOGS/sand1m.json" --csv "$LOGS/sand1m.csv"
    # CUDA graphs where launches cost the most, off and on interleaved twice.
    for r in 1 2; do
        for g in off on; do
            step "bench sand $(n 100k), atomic P2G, graphs $g (round $r)" bench 30 2 \
                "$LOGS/graphs-$g-$r.json" -- "$FIRN" bench --backend cuda --scenes sand_block \
                --layout dense --particles "$(n 100k)" --p2g atomic --graphs "$g" \
                $(timing 100 100 3) --json "$LOGS/graphs-$g-$r.json" --csv "$LOGS/graphs-$g-$r.csv"
        done
    done
    # 32M with the three fastest variants at 8M (all three when 8M gave none).
    BEST=$("$PY" bench/gpu_figures.py best --json "$LOGS/sand8m.json" --count 3 2>/dev/null)
    BEST=${BEST:-binned,warp,g2p2g}
    step "bench sand $(n 32m) dense, the three fastest P2G at 8M ($BEST)" bench 120 30 \
        "$LOGS/sand32m.json" -- "$FIRN" bench --backend cuda --scenes sand_block --layout dense \
        --particles "$(n 32m)" --p2g "$BEST" $(timing 100 50 3) \
        --json "$LOGS/sand32m.json" --csv "$LOGS/sand32m.csv"
fi

# ---- call B: correct ---------------------------------------------------------
# H200 estimates (2026-12-04): the GPU tests 21 s for 41 (0.5 s each, one
# job); a compare of one frame about 1 s; memcheck of one frame 1 to 5 s;
# racecheck of one frame of ball_in_sand 47 s (about 50 substeps of 16k
# particles), so about 5 s for 3 substeps of 20k.
if [[ $MODE == correct ]]; then
    # The GPU tests, four at a time (each is small; the GPU has room). None
    # may skip: a skip means the device was not usable.
    TEST_FILTER=${GPU_CHECK_TEST_FILTER:-'gpu*/*'}
    JOBS=4
    if [[ $REHEARSAL == 1 ]]; then
        # make emu-check runs them all on the emulated device; here a few.
        TEST_FILTER=${GPU_CHECK_TEST_FILTER:-'gpu/device_describe'}
        JOBS=1
    fi
    step "GPU tests ($TEST_FILTER), none skipped" tests 150 40 - -- bash -c \
        'env FIRN_BIN="$1" "$2" --jobs "$3" --verbose --filter "$4" >"$5" 2>&1; rc=$?; cat "$5";
         if grep -E "^\[SKIP\] gpu[a-z_]*::" "$5" | grep -vq "Test is disabled"; then
             echo "a GPU test skipped (the device was not usable)"; exit 1; fi
         exit $rc' _ "$FIRN" "$TESTS" "$JOBS" "$TEST_FILTER" "$TMP/tests.out"
    if [[ $LAST_RC != 0 && $LAST_RC != 124 && $LAST_RC != 137 ]]; then
        if NF=$(nofma test_firn); then
            step "GPU tests, device code without FMA" tests 120 40 - -- env FIRN_BIN="$FIRN" "$NF" \
                --jobs 4 --filter "$TEST_FILTER"
        fi
        debug_rerun "GPU tests" tests env FIRN_BIN="$FIRN" "$TESTS" --jobs 4 --filter "$TEST_FILTER"
    fi
    # Every shipped scene, one frame (the rehearsal: three; make emu-check
    # compares every scene on the emulated device).
    # The rehearsal compares three (make emu-check compares every scene on
    # the emulated device); the others are recorded with their estimates,
    # so that the plan is the device's.
    REHEARSED=" scenes/sand_column.json scenes/sph_dam_break.json scenes/pbd_cloth_sphere.json "
    for scene in scenes/*.json; do
        name="compare $(basename "$scene" .json) (1 frame)"
        if [[ $REHEARSAL == 1 && $REHEARSED != *" $scene "* ]]; then
            skipped "$name" compare 1 "make emu-check compares it"
        else
            compare_step "$name" 1 "$scene" --frames 1
        fi
    done
    # The P2G variants the shipped scenes do not take by default: every
    # material, and the rigid coupling (the rehearsal: a small scene of every
    # material in place of mixed, as the emulated warp P2G takes minutes on
    # these; ball_in_sand's are make emu-check's).
    for v in binned warp ordered g2p2g; do
        if [[ $REHEARSAL == 1 ]]; then
            compare_step "compare check_mpm_small (1 frame), $v P2G" 1 \
                bench/check_scenes/check_mpm_small.json --frames 1 --p2g "$v"
            skipped "compare ball_in_sand (1 frame), $v P2G" compare 1 \
                "make emu-check compares it with binned, ordered and g2p2g"
            continue
        fi
        for name in mixed ball_in_sand; do
            compare_step "compare $name (1 frame), $v P2G" 1 "scenes/$name.json" --frames 1 \
                --p2g "$v"
        done
    done
    # Two --deterministic runs give the same bytes; the default P2G's two
    # runs are reported, not required to differ.
    DET=scenes/sand_column.json FRAMES_DET=5
    [[ $REHEARSAL == 1 ]] && DET=bench/check_scenes/check_mpm_small.json FRAMES_DET=1
    step "deterministic: two runs of $(basename "$DET" .json) ($FRAMES_DET frames) byte-identical" \
        det 60 5 - -- \
        bash -c 'for r in 1 2; do "$1" run "$4" --backend cuda --deterministic \
                     --frames "$3" --quiet --out "$2/det$r" || exit 1; done
                 f=$(printf "frame_%05d.ply" "$3")
                 cmp "$2/det1/$f" "$2/det2/$f" && echo "deterministic: identical" || exit 1
                 for r in 1 2; do "$1" run "$4" --backend cuda --frames "$3" \
                     --quiet --out "$2/atomic$r" || exit 1; done
                 cmp -s "$2/atomic1/$f" "$2/atomic2/$f" && echo "default P2G: identical too" ||
                     echo "default P2G: the two runs differ"' _ "$FIRN" "$TMP" "$FRAMES_DET" "$DET"
    # memcheck: one frame of each of three scenes that between them launch
    # every kernel of kernels/ but the P2G variants' (bench/check_scenes/:
    # every MPM material, rigid bodies with CPIC, a tool, WCSPH and explicit
    # FEM with their pairs; PBD cloth and liquid, MPM-PBD, PBD-rigid and
    # DFSPH with the warp P2G; implicit FEM over snow with G2P2G), then
    # sand_column with the ordered P2G on the sparse grid, and a small bench
    # of the atomic, binned and ordered P2G on the dense grid.
    for run in check_all_a:auto check_all_b:warp check_all_c:g2p2g; do
        IFS=: read -r name v <<<"$run"
        sanitize memcheck "$name (1 frame, $v P2G)" 8 "$FIRN" run "bench/check_scenes/$name.json" \
            --backend cuda --frames 1 --p2g "$v" --quiet --out "$TMP/memcheck-$name"
    done
    sanitize memcheck "sand_column (1 frame, ordered P2G, sparse grid)" 5 "$FIRN" run \
        scenes/sand_column.json --backend cuda --frames 1 --p2g ordered --grid sparse --quiet \
        --out "$TMP/memcheck-sparse"
    sanitize memcheck "bench sand $(n 20k), atomic, binned and ordered P2G, 3 substeps" 5 "$FIRN" \
        bench --backend cuda --scenes sand_block --layout dense --particles "$(n 20k)" \
        --p2g atomic,binned,ordered --warmup 1 --substeps 3 --repeats 1 \
        --json "$TMP/mc-bench.json" --csv "$TMP/mc-bench.csv"
    # The fixed-point tile (FIRN_P2G_TILE=fixed, in the environment of the
    # sanitizer and its target): past the third substep every bin has a
    # bound and scatters through the tile.
    FIRN_P2G_TILE=fixed sanitize memcheck \
        "bench sand $(n 20k), binned and g2p2g P2G, fixed-point tile, 6 substeps" 5 "$FIRN" \
        bench --backend cuda --scenes sand_block --layout dense --particles "$(n 20k)" \
        --p2g binned,g2p2g --warmup 3 --substeps 3 --repeats 1 \
        --json "$TMP/mc-fixed.json" --csv "$TMP/mc-fixed.csv"
    # The reorder (FIRN_P2G_REORDER=1): the particles gathered into the bin
    # order every substep, scattered back to the scene's order at the
    # frame's download.
    FIRN_P2G_REORDER=1 sanitize memcheck "sand_column (1 frame, g2p2g P2G, reorder every substep)" \
        5 "$FIRN" run scenes/sand_column.json --backend cuda --frames 1 --p2g g2p2g --quiet \
        --out "$TMP/memcheck-reorder"
    # racecheck: the shared-memory tiles of the tiled P2G variants (zeroing,
    # scatter, flush between barriers), the fixed-point tile's, and SPH's
    # kernels.
    for v in binned warp g2p2g; do
        sanitize racecheck "bench sand $(n 20k), $v P2G, 3 substeps" 12 "$FIRN" bench \
            --backend cuda --scenes sand_block --layout dense --particles "$(n 20k)" --p2g "$v" \
            --warmup 1 --substeps 3 --repeats 1 --json "$TMP/rc-$v.json" --csv "$TMP/rc-$v.csv"
    done
    FIRN_P2G_TILE=fixed sanitize racecheck \
        "bench sand $(n 20k), binned P2G, fixed-point tile, 6 substeps" 12 "$FIRN" bench \
        --backend cuda --scenes sand_block --layout dense --particles "$(n 20k)" --p2g binned \
        --warmup 3 --substeps 3 --repeats 1 --json "$TMP/rc-fixed.json" --csv "$TMP/rc-fixed.csv"
    sanitize racecheck "bench sph_dam_break $(n 20k), 3 substeps" 12 "$FIRN" bench --backend cuda \
        --scenes sph_dam_break --layout dense --particles "$(n 20k)" --warmup 1 --substeps 3 \
        --repeats 1 --json "$TMP/rc-sph.json" --csv "$TMP/rc-sph.csv"
fi

# ---- call C: heavy -----------------------------------------------------------
if [[ $MODE == heavy ]]; then
    step "bench SPH dam break WCSPH and DFSPH $(n 100k)" bench 120 30 "$LOGS/sph.json" -- \
        "$FIRN" bench --backend cuda --scenes sph_dam_break,sph_dam_break_dfsph --layout dense \
        --particles "$(n 100k)" $(timing 100 20 3) --json "$LOGS/sph.json" --csv "$LOGS/sph.csv"
    step "bench pbd_cloth, pbd_liquid, fem_beam $(n 100k) and $(n 1m)" bench 150 40 \
        "$LOGS/pbd-fem.json" -- "$FIRN" bench --backend cuda --scenes pbd_cloth,pbd_liquid,fem_beam \
        --layout dense --particles "$(n 100k),$(n 1m)" $(timing 50 20 3) \
        --json "$LOGS/pbd-fem.json" --csv "$LOGS/pbd-fem.csv"
    step "bench fem_beam_implicit $(n 20k) and $(n 100k) elements" bench 120 30 \
        "$LOGS/fem-implicit.json" -- "$FIRN" bench --backend cuda --scenes fem_beam_implicit \
        --layout dense --particles "$(n 20k),$(n 100k)" $(timing 5 5 3) \
        --json "$LOGS/fem-implicit.json" --csv "$LOGS/fem-implicit.csv"
    step "bench MPM matrix: 3 scenes, 2 layouts, $(n 100k)-$(n 8m), every P2G" bench 300 150 \
        "$LOGS/matrix.json" -- "$FIRN" bench --backend cuda --particles "$(n 100k),$(n 1m),$(n 8m)" \
        --p2g all $(timing 300 100 3) --json "$LOGS/matrix.json" --csv "$LOGS/matrix.csv"
    if [[ $REHEARSAL != 1 ]]; then
        # The open domain (1025^3 nodes, 1M particles): sparse against dense.
        for g in sparse dense; do
            step "large open domain: sand_open_1024, 2 frames, --grid $g" info 90 20 - -- \
                "$FIRN" run scenes/large/sand_open_1024.json --backend cuda --grid "$g" --frames 2 \
                --every 100 --out "$TMP/open-$g"
        done
        # 32M particles run and write their frames (1.06 GB of PLY each).
        step "large scene: sand_slump_32m, 2 frames" info 120 25 - -- bash -c \
            '"$1" run scenes/large/sand_slump_32m.json --backend cuda --frames 2 --every 1 \
                 --out "$2/large" && ls -l "$2/large" && rm -rf "$2/large"' _ "$FIRN" "$TMP"
    fi
fi

TOTAL=$(($(date +%s) - START))
publish
echo
cat "$REPORT"
if [[ -z ${OUT:-} || ! -d ${OUT:-} ]]; then
    echo "(written to $REPORT and $FIGURES)"
fi
rm -rf "$TMP"
# Let tee write the last lines to the console file before the script ends.
if [[ -n ${TEE_PID:-} ]]; then
    exec >&- 2>&-
    wait "$TEE_PID" 2>/dev/null
fi
((FAILED == 0))
