#!/usr/bin/env bash
# The distributed run (make MPI=1, docs/MPI.md) against the one-rank run
# and against itself (make mpi-test; CI). For each scene of test/data/mpi/:
# one run of ONE (the build without MPI) on the CPU path, two runs of
# MPI_FIRN under mpirun -np 2 and one with -np 3, each checked by
# test/mpi_check.py (on 3 ranks the sand column leaves a rank without
# particles). Then what the distributed run refuses, each by name with
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
refuse "--resume: not supported" run test/data/mpi/sand_column.json --resume --out "$out/r4"
refuse "--checkpoint-every: not supported" run test/data/mpi/sand_column.json --checkpoint-every 1 \
    --out "$out/r5"
refuse "--backend cuda: not supported" run test/data/mpi/sand_column.json --backend cuda \
    --out "$out/r6"
refuse "firn bench: not supported" bench
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
