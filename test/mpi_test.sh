#!/usr/bin/env bash
# The distributed run (make MPI=1, docs/MPI.md) against the one-rank run
# and against itself (make mpi-test; CI). For each scene of test/data/mpi/:
# one run of ONE (the build without MPI) on the CPU path, two runs of
# MPI_FIRN under mpirun -np 2 and one with -np 3, each checked by
# test/mpi_check.py (on 3 ranks the sand column leaves a rank without
# particles). Then checkpoint sets: resumed runs (after SIGTERM to one
# rank, from a permuted layout, on 3 ranks with an empty one) against
# uninterrupted runs, to the bit, and refused resumes (a damaged manifest,
# a missing or damaged rank file, one rank's file in one process, another
# rank count). Then what the distributed run refuses, each by name with
# exit code 2.
# Nothing here is optional: without mpirun the test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
ONE=${ONE:-build/firn}
MPI_FIRN=${MPI_FIRN:-build/mpi/firn}
PYTHON=${PYTHON:-python3}
RANKS=${RANKS:-2}
command -v mpirun >/dev/null || {
    echo "mpi-test: mpirun not found: install openmpi-bin and libopenmpi-dev" >&2
    exit 1
}
for b in "$ONE" "$MPI_FIRN"; do
    [ -x "$b" ] || { echo "mpi-test: $b not built" >&2; exit 1; }
done
# One OpenMP thread per rank; more ranks than cores is allowed (a 2-core
# machine), and so is root (a CI container). Unbound, and yielding the
# core while waiting: on a machine shared with other jobs, a rank pinned to
# a core another process holds, or one spinning in a wait, holds up the
# other rank (measured on 2 busy cores: 6 times slower without them).
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN_BASE=(mpirun --oversubscribe --bind-to none --mca mpi_yield_when_idle 1 -x OMP_NUM_THREADS)
MPIRUN=("${MPIRUN_BASE[@]}" -np "$RANKS")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for scene in sand_column ball_in_sand; do
    json=test/data/mpi/$scene.json
    t0=$(date +%s%N)
    "$ONE" run "$json" --backend cpu --quiet --out "$out/$scene.one"
    t1=$(date +%s%N)
    "${MPIRUN[@]}" "$MPI_FIRN" run "$json" --out "$out/$scene.ranks" 2>"$out/$scene.log" ||
        { cat "$out/$scene.log" >&2; exit 1; }
    t2=$(date +%s%N)
    "${MPIRUN[@]}" "$MPI_FIRN" run "$json" --quiet --out "$out/$scene.again"
    grep '^firn: \(done\|rank\)' "$out/$scene.log"
    echo "mpi-test: $scene: $(((t1 - t0) / 1000000)) ms on one rank, $(((t2 - t1) / 1000000)) ms on" \
        "$RANKS ranks"
    both=""
    [ "$scene" = ball_in_sand ] && both=--both-ways
    "$PYTHON" test/mpi_check.py "$json" "$out/$scene.one" "$out/$scene.ranks" "$out/$scene.again" \
        "$out/$scene.log" $both
    # 3 ranks, against one rank (its repeat: itself), with the particles
    # reordered into block order at every substep that has a far step.
    FIRN_MPI_REORDER_RUN=1073741824 "${MPIRUN_BASE[@]}" -np 3 -x FIRN_MPI_REORDER_RUN "$MPI_FIRN" run "$json" \
        --out "$out/$scene.three" 2>"$out/$scene.log3" || { cat "$out/$scene.log3" >&2; exit 1; }
    grep '^firn: rank' "$out/$scene.log3"
    empty=--reordered
    [ "$scene" = sand_column ] && empty="--empty-rank --reordered"
    "$PYTHON" test/mpi_check.py "$json" "$out/$scene.one" "$out/$scene.three" "$out/$scene.three" \
        "$out/$scene.log3" $empty
done

# Rebalancing (docs/MPI.md): a sand block thrown along x leaves the first
# slabs for the last; the slabs are split again at frame boundaries, alike
# on every rank, and the run matches one rank's as the others do.
drift=test/data/mpi/sand_drift.json
"$ONE" run $drift --backend cpu --quiet --out "$out/drift.one"
"${MPIRUN[@]}" "$MPI_FIRN" run $drift --out "$out/drift.ranks" 2>"$out/drift.log" ||
    { cat "$out/drift.log" >&2; exit 1; }
"${MPIRUN[@]}" "$MPI_FIRN" run $drift --quiet --out "$out/drift.again"
grep '^firn: rank' "$out/drift.log"
"$PYTHON" test/mpi_check.py $drift "$out/drift.one" "$out/drift.ranks" "$out/drift.again" \
    "$out/drift.log" --rebalanced

# Checkpoint sets (docs/MPI.md): resumed runs give the frames of an
# uninterrupted run, to the bit (stats.jsonl less wall times, every PLY).
same() { # same DIR_A DIR_B WHAT: stats.jsonl (less wall times) and every PLY frame equal
    "$PYTHON" - "$1" "$2" "$3" <<'PY'
import json, os, sys
a, b, what = sys.argv[1:]
def stats(d):
    with open(os.path.join(d, "stats.jsonl")) as f:
        return [{k: v for k, v in json.loads(l).items() if k not in ("wall_seconds", "throughput")} for l in f]
sa, sb = stats(a), stats(b)
if sa != sb:
    sys.exit("mpi-test: FAIL: %s: stats.jsonl differs (%d and %d frames)" % (what, len(sa), len(sb)))
plys = sorted(f for f in os.listdir(a) if f.endswith(".ply"))
if plys != sorted(f for f in os.listdir(b) if f.endswith(".ply")):
    sys.exit("mpi-test: FAIL: %s: not the same PLY files" % what)
for f in plys:
    if open(os.path.join(a, f), "rb").read() != open(os.path.join(b, f), "rb").read():
        sys.exit("mpi-test: FAIL: %s: %s differs" % (what, f))
print("mpi-test: %s: stats.jsonl (%d frames) and %d PLY frames identical to the bit" % (what, len(sa), len(plys)))
PY
}
ball=test/data/mpi/ball_in_sand.json
t0=$(date +%s%N)
# The reference: 8 frames on 2 ranks, uninterrupted, no checkpoint.
"${MPIRUN_BASE[@]}" -np 2 "$MPI_FIRN" run $ball --frames 8 --quiet --checkpoint-every off --out "$out/ref8"
# SIGTERM to rank 1 alone once frame 1 is written: every rank stops at the
# same frame boundary with a checkpoint set, and exits 143 (128 + SIGTERM,
# as firn run does); sets every 3 frames besides.
"${MPIRUN_BASE[@]}" -np 2 "$MPI_FIRN" run $ball --frames 8 --checkpoint-every 3 --out "$out/sig" \
    >"$out/sig.log" 2>&1 &
mp=$!
for _ in $(seq 1 600); do
    [ -f "$out/sig/stats.jsonl" ] && [ "$(wc -l <"$out/sig/stats.jsonl")" -ge 2 ] && break
    sleep 0.02
done
rank1=
for p in $(ps -o pid= --ppid $mp); do # the rank process whose MPI rank is 1
    grep -qaxz OMPI_COMM_WORLD_RANK=1 "/proc/$p/environ" && rank1=$p
done
[ -n "$rank1" ] || { echo "mpi-test: FAIL: rank 1's process not found under mpirun ($mp)" >&2; exit 1; }
kill -TERM "$rank1"
set +e
wait $mp
rc=$?
set -e
stopped=$(sed -n 's/^firn: SIGTERM: every rank stopped after frame \([0-9]*\) of 8.*/\1/p' "$out/sig.log")
if [ $rc != 143 ] || [ -z "$stopped" ] || [ ! -f "$out/sig/checkpoint_$(printf %05d "$stopped").manifest" ]; then
    echo "mpi-test: FAIL: SIGTERM to rank 1: exit $rc (143 expected), stop frame '$stopped':" >&2
    cat "$out/sig.log" >&2
    exit 1
fi
[ "$(wc -l <"$out/sig/stats.jsonl")" = $((stopped + 1)) ] ||
    { echo "mpi-test: FAIL: stats.jsonl does not end at the stop frame $stopped" >&2; exit 1; }
echo "mpi-test: SIGTERM to rank 1: every rank stopped after frame $stopped of 8, exit 143"
"${MPIRUN_BASE[@]}" -np 2 "$MPI_FIRN" run $ball --frames 8 --quiet --checkpoint-every 3 --resume \
    --out "$out/sig"
same "$out/ref8" "$out/sig" "SIGTERM after frame $stopped, resumed on 2 ranks, against the uninterrupted run"
# Resume from a named set (frame 2) with the particles reordered into
# block order at nearly every substep, so that a rank's file holds the CPU
# path's permuted layout (section CPUL), against the run that wrote it.
REORDER=(-x FIRN_MPI_REORDER_RUN)
export FIRN_MPI_REORDER_RUN=1073741824
"${MPIRUN_BASE[@]}" -np 2 "${REORDER[@]}" "$MPI_FIRN" run $ball --quiet --checkpoint-every 2 --out "$out/lay"
cp -r "$out/lay" "$out/lay2"
grep -qa CPUL "$out"/lay/checkpoint_00002.rank*.firn ||
    { echo "mpi-test: FAIL: no rank's file of frame 2 holds a permuted layout" >&2; exit 1; }
"${MPIRUN_BASE[@]}" -np 2 "${REORDER[@]}" "$MPI_FIRN" run $ball --quiet --checkpoint-every 2 \
    --resume "$out/lay2/checkpoint_00002.manifest" --out "$out/lay2"
same "$out/lay" "$out/lay2" "resumed from frame 2 (permuted layout) on 2 ranks"
unset FIRN_MPI_REORDER_RUN
# 3 ranks, the last without particles (its file holds none): the same.
"${MPIRUN_BASE[@]}" -np 3 "$MPI_FIRN" run test/data/mpi/sand_column.json --quiet --checkpoint-every 2 \
    --out "$out/three"
grep -q '^rank 2 file checkpoint_00002.rank2.firn bytes [0-9]* crc32c [0-9a-f]* particles 0$' \
    "$out/three/checkpoint_00002.manifest" ||
    { echo "mpi-test: FAIL: rank 2 holds particles at frame 2" >&2; exit 1; }
cp -r "$out/three" "$out/three2"
"${MPIRUN_BASE[@]}" -np 3 "$MPI_FIRN" run test/data/mpi/sand_column.json --quiet --checkpoint-every 2 \
    --resume "$out/three2/checkpoint_00002.manifest" --out "$out/three2"
same "$out/three" "$out/three2" "resumed from frame 2 on 3 ranks, one without particles"
# A set written after the slabs were split again (its manifest's slabs are
# not the scene's first split, which --rebalance off keeps): resumed on
# them, to the bit.
"${MPIRUN_BASE[@]}" -np 2 "$MPI_FIRN" run $drift --quiet --checkpoint-every 3 --out "$out/dr"
"${MPIRUN_BASE[@]}" -np 2 "$MPI_FIRN" run $drift --quiet --checkpoint-every 3 --rebalance off \
    --out "$out/dr_off"
split=$(grep '^col_lo' "$out/dr/checkpoint_00003.manifest")
first=$(grep '^col_lo' "$out/dr_off/checkpoint_00003.manifest")
[ "$split" != "$first" ] ||
    { echo "mpi-test: FAIL: the slabs at frame 3 ($split) are the first split's" >&2; exit 1; }
cp -r "$out/dr" "$out/dr2"
"${MPIRUN_BASE[@]}" -np 2 "$MPI_FIRN" run $drift --quiet --checkpoint-every 3 \
    --resume "$out/dr2/checkpoint_00003.manifest" --out "$out/dr2"
same "$out/dr" "$out/dr2" "resumed from frame 3 on slabs split again ($split, first $first)"
t1=$(date +%s%N)
echo "mpi-test: checkpoint and resume runs: $(((t1 - t0) / 1000000)) ms"

# Refused resumes: exit 9 (a checkpoint refused), the file and the field
# named, nothing in the folder changed.
refuse_resume() { # NP DIR WANT
    local np=$1 dir=$2 want=$3 before after rc
    before=$(cd "$dir" && ls && md5sum stats.jsonl ./*.ply ./*.manifest ./*.firn)
    set +e
    "${MPIRUN_BASE[@]}" -np "$np" "$MPI_FIRN" run $ball --resume --out "$dir" >"$out/refused.log" 2>&1
    rc=$?
    set -e
    after=$(cd "$dir" && ls && md5sum stats.jsonl ./*.ply ./*.manifest ./*.firn)
    if [ $rc != 9 ] || ! grep -q -- "$want" "$out/refused.log" || [ "$before" != "$after" ]; then
        echo "mpi-test: FAIL: resume on $np ranks of $dir: exit $rc (9 expected), '$want' expected," \
            "folder $([ "$before" = "$after" ] && echo unchanged || echo CHANGED):" >&2
        cat "$out/refused.log" >&2
        exit 1
    fi
    echo "mpi-test: refused as it should: $(grep -m 1 -o "error: .*" "$out/refused.log" | head -c 200)"
}
cp -r "$out/lay" "$out/bad1"
sed -i 's/^ranks 2$/ranks 3/' "$out/bad1/checkpoint_00004.manifest"
refuse_resume 2 "$out/bad1" "field 'crc32c': the file is damaged"
cp -r "$out/lay" "$out/bad2"
rm "$out/bad2/checkpoint_00004.rank1.firn"
refuse_resume 2 "$out/bad2" "cannot read rank 1's checkpoint file '.*checkpoint_00004.rank1.firn' (field 'file'"
cp -r "$out/lay" "$out/bad3"
printf 'X' | dd of="$out/bad3/checkpoint_00004.rank0.firn" bs=1 seek=5000 conv=notrunc status=none
refuse_resume 2 "$out/bad3" "field 'crc32c': rank 0's file"
# One rank's file, given to the build without MPI: refused as such.
set +e
"$ONE" run $ball --backend cpu --resume "$out/lay/checkpoint_00004.rank0.firn" --out "$out/one_res" \
    >"$out/refused.log" 2>&1
rc=$?
set -e
[ $rc = 9 ] && grep -q "is one rank's file of a run on several MPI ranks" "$out/refused.log" ||
    { echo "mpi-test: FAIL: a rank's file resumed by one process: exit $rc" >&2; cat "$out/refused.log" >&2; exit 1; }
echo "mpi-test: refused as it should: $(grep -m 1 -o "error: .*" "$out/refused.log" | head -c 200)"
# Another rank count: refused, naming both.
refuse_resume 3 "$out/lay" "field 'ranks': the set was written by 2 MPI ranks; this run has 3"

# Exit code and message: refusals exit with 2 and name what they refuse (expect's
# first argument: the exit code, then the text).
expect() {
    local code=$1 want=$2
    shift 2
    set +e
    "${MPIRUN[@]}" "$MPI_FIRN" "$@" >"$out/refused.log" 2>&1
    local rc=$?
    set -e
    if [ $rc != "$code" ] || ! grep -q -- "$want" "$out/refused.log"; then
        echo "mpi-test: FAIL: '$MPI_FIRN $*' on $RANKS ranks: exit $rc, expected $code and '$want':" >&2
        cat "$out/refused.log" >&2
        exit 1
    fi
    echo "mpi-test: exit $code as it should: $* ($want)"
}
refuse() { expect 2 "$@"; }
refuse "SPH liquids" run scenes/sph_dam_break.json --out "$out/r1"
refuse "PBD bodies" run scenes/pbd_cloth_sand.json --out "$out/r2"
refuse "FEM bodies" run scenes/fem_ball_sand.json --out "$out/r3"
refuse "CPIC" run scenes/snow_cup.json --out "$out/r0"
refuse "--backend cuda: not supported" run test/data/mpi/sand_column.json --backend cuda \
    --out "$out/r6"
refuse "firn bench: not supported" bench
refuse "--rebalance expects the imbalance" run test/data/mpi/sand_column.json --rebalance 0.5 \
    --out "$out/r7"
refuse "--out needs a folder" run test/data/mpi/sand_column.json --out
refuse "--frames expects a positive integer" run test/data/mpi/sand_column.json --frames x \
    --out "$out/r8"
[ "$(grep -c 'expects a positive integer' "$out/refused.log")" = 1 ] ||
    { echo "mpi-test: FAIL: --frames x named $(grep -c 'expects' "$out/refused.log") times, not once" >&2; exit 1; }
# A particle that goes non-finite stops every rank at that substep; one
# rank (the one holding the lowest such scene index) names it, and the
# frames before stay written.
expect 5 "has a non-finite position or velocity" run test/data/mpi/blow_up.json --quiet \
    --out "$out/blow"
[ "$(grep -c 'non-finite' "$out/refused.log")" = 1 ] ||
    { echo "mpi-test: FAIL: the non-finite particle named $(grep -c 'non-finite' "$out/refused.log") times" >&2; exit 1; }
last=$(ls "$out/blow" | grep -c '^frame_.*\.ply$')
[ "$last" -ge 2 ] || { echo "mpi-test: FAIL: the frames before the blow-up are missing" >&2; exit 1; }
echo "mpi-test: ok"
