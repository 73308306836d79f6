#!/usr/bin/env bash
# rehearsal.sh - make gpu-rehearsal: the GPU check's device window rehearsed
# on the emulated runtime (CI runs it). It
#   1. packs the bundle the device tool would carry (bench/pack_gpu.sh,
#      which fails over 60 MiB) and prints its size;
#   2. runs call A (speed) and call B (correct) of bench/gpu_check.sh on the
#      emulated device, scaled down (GPU_CHECK_REHEARSAL=1: the same steps in
#      the same order, small particle counts), each into its own $OUT;
#   3. cuts a third run of call A off after REHEARSAL_CUT_S seconds (default
#      25) with SIGKILL, as the device tool does at a call's limit, and checks
#      that its $OUT still holds the report and the figures of the steps that
#      finished;
#   4. checks (bench/gpu_figures.py rehearsal): every step passed and wrote
#      its figure, each $OUT within the device tool's limits (8 plain files
#      of at most 16 MiB, no folder), each call's steps within its budget by
#      their H200 estimates (each step's share printed), and the memcheck
#      runs of call B launching every kernel of kernels/.
# Needs make emu first (the Makefile's target does it). Exits non-zero on any
# failure.
set -u
cd "$(dirname "$0")/.." || exit 1
WORK=$(mktemp -d /tmp/firn-rehearsal.XXXXXX)
FAILED=0
REASONS=() # repeated at the end: CI shows a log's last lines
fail() { # reason
    echo "gpu-rehearsal: FAIL: $1"
    REASONS+=("$1")
    FAILED=1
}
PY=$(command -v python3)

echo "== gpu-rehearsal: the bundle (bench/pack_gpu.sh)"
BYTES=""
if PACK_ALLOW_DIRTY=1 bash bench/pack_gpu.sh >"$WORK/pack.log" 2>&1; then
    grep -E "^pack_gpu.sh: bundle|MiB  \./bin/" "$WORK/pack.log"
    BYTES=$(du -sb .gpu | cut -f1)
else
    tail -n 20 "$WORK/pack.log"
    fail "bench/pack_gpu.sh failed: $(grep -E 'pack_gpu.sh:|rror' "$WORK/pack.log" | tail -n 1)"
fi

for mode in speed correct; do
    echo "== gpu-rehearsal: call $mode on the emulated device"
    mkdir -p "$WORK/$mode"
    t0=$(date +%s)
    OUT="$WORK/$mode" GPU_CHECK_REHEARSAL=1 bash bench/gpu_check.sh "$mode" >"$WORK/$mode.log" 2>&1
    rc=$?
    echo "gpu-rehearsal: call $mode exited $rc after $(($(date +%s) - t0)) s (emulated)"
    ((rc == 0)) || {
        tail -n 40 "$WORK/$mode.log"
        fail "call $mode exited $rc: $(grep -E 'FAIL' "$WORK/$mode.log" | head -n 3 | tr '\n' ' ')"
    }
done

CUT=${REHEARSAL_CUT_S:-25}
echo "== gpu-rehearsal: call speed killed after $CUT s"
mkdir -p "$WORK/cut"
OUT="$WORK/cut" GPU_CHECK_REHEARSAL=1 timeout -s KILL "$CUT" bash bench/gpu_check.sh speed \
    >"$WORK/cut.log" 2>&1
if "$PY" - "$WORK/cut" <<'PYEOF'; then
import json, os, sys
out = sys.argv[1]
doc = json.load(open(os.path.join(out, "figures-speed.json")))
done = [s for s in doc["steps"] if s["result"] == "PASS"]
assert os.path.getsize(os.path.join(out, "report-speed.md")) > 0
assert done and all(s["figure"] for s in done), "a finished step without its figure"
print(f"gpu-rehearsal: cut off: $OUT kept {len(done)} finished step(s) with their figures "
      f"({', '.join(sorted(os.listdir(out)))})")
PYEOF
    :
else
    fail "the call cut off after $CUT s left no report or figures"
fi

echo "== gpu-rehearsal: checks"
"$PY" bench/gpu_figures.py rehearsal --out "$WORK/speed" "$WORK/correct" --modes speed correct \
    ${BYTES:+--bundle-bytes "$BYTES"} || fail "bench/gpu_figures.py rehearsal (above)"
if ((FAILED)); then
    for r in "${REASONS[@]}"; do echo "gpu-rehearsal: failed: $r"; done
    echo "gpu-rehearsal: FAIL (logs in $WORK)"
    exit 1
fi
rm -rf "$WORK"
echo "gpu-rehearsal: PASS"
