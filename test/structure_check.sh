#!/usr/bin/env bash
# structure_check.sh - proves that a change of structure changed nothing
# else (make structure-check): runs every shipped scene (scenes/*.json) for
# FRAMES frames (default 3) on the CPU path, every frame written
# (--every 1), and prints a sha256 of each output file into a manifest:
# the PLY and VTU frames, the previews, the ParaView series and collection
# files, and stats.jsonl less its wall-clock fields (wall_seconds and
# throughput, which is particle-substeps per wall second). The CPU path is
# bitwise repeatable at any OpenMP thread count, so a manifest saved before
# a refactor must match the one after it.
#
#   test/structure_check.sh [--firn BIN] [--frames N] [--threads N] [--keep DIR]
#                           [--save FILE | --check FILE]
#
#   --save FILE   writes the manifest to FILE
#   --check FILE  compares against FILE, names every file that differs, is
#                 missing or is new, and exits 1 if any does
#   (neither)     prints the manifest
#   --firn BIN    the firn to run (default $FIRN_BIN, else build/firn)
#   --threads N   OMP_NUM_THREADS (default 1)
#   --keep DIR    writes the runs into DIR (kept) instead of a temporary folder
#
# Run time: about 35 s for the 26 scenes on 2 cores, 1 thread (380 files;
# the slowest, sph_snowball_pool and fem_ball_sand, about 5 s each for 3
# frames). scenes/large/ (benchmark domains) is left out. A scene that fails
# to run is a failure. The hashes depend on the compiler and the machine's
# floating point: compare manifests made by the same build set-up.
set -euo pipefail
cd "$(dirname "$0")/.."

FIRN=${FIRN_BIN:-build/firn}
FRAMES=3
THREADS=1
MODE=print
FILE=
KEEP=
while (($#)); do
    case $1 in
    --firn) FIRN=$2; shift 2 ;;
    --frames) FRAMES=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    --save) MODE=save; FILE=$2; shift 2 ;;
    --check) MODE=check; FILE=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "structure_check: unknown argument '$1' (--help)" >&2; exit 2 ;;
    esac
done
[ -x "$FIRN" ] || { echo "structure_check: '$FIRN' is not an executable firn (--firn)" >&2; exit 2; }
if [ "$MODE" = check ] && [ ! -r "$FILE" ]; then
    echo "structure_check: cannot read the manifest '$FILE'" >&2
    exit 2
fi

if [ -n "$KEEP" ]; then
    mkdir -p "$KEEP"
    WORK=$(cd "$KEEP" && pwd)
else
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/firn-structure.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
fi
export OMP_NUM_THREADS=$THREADS OMP_WAIT_POLICY=passive

MANIFEST=$WORK/manifest.txt
: >"$MANIFEST"
t0=$(date +%s.%N)
for scene in scenes/*.json; do
    name=$(basename "$scene" .json)
    out=$WORK/$name
    rm -rf "$out"
    s0=$(date +%s.%N)
    if ! "$FIRN" run "$scene" --backend cpu --frames "$FRAMES" --every 1 --checkpoint-every off \
        --quiet --out "$out" >"$WORK/$name.log" 2>&1; then
        echo "structure_check: $scene failed; its output:" >&2
        cat "$WORK/$name.log" >&2
        exit 1
    fi
    # stats.jsonl less the wall-clock fields (the run's only timings).
    sed -E 's/,"wall_seconds":[^,}]*//; s/,"throughput":[^,}]*//' "$out/stats.jsonl" \
        >"$out/stats.nowall.jsonl"
    grep -q wall_seconds "$out/stats.nowall.jsonl" &&
        { echo "structure_check: wall_seconds left in $name's stats" >&2; exit 1; }
    rm -f "$out/stats.jsonl" "$out/.firn.lock"
    (cd "$out" && LC_ALL=C find . -type f | LC_ALL=C sort | sed 's|^\./||' |
        while read -r f; do
            printf '%s  %s/%s\n' "$(sha256sum <"$f" | cut -d' ' -f1)" "$name" "$f"
        done) >>"$MANIFEST"
    printf 'structure_check: %-28s %5.1f s\n' "$name" \
        "$(awk -v a="$s0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')" >&2
done
printf 'structure_check: %d files of %d scenes, %d frames, %s thread(s), %.0f s\n' \
    "$(wc -l <"$MANIFEST")" "$(ls scenes/*.json | wc -l)" "$FRAMES" "$THREADS" \
    "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')" >&2

case $MODE in
print) cat "$MANIFEST" ;;
save)
    cp "$MANIFEST" "$FILE"
    echo "structure_check: manifest written to $FILE" >&2
    ;;
check)
    # Every path of either manifest whose hash differs or that one lacks.
    bad=$(LC_ALL=C join -j 2 -a 1 -a 2 -e MISSING -o 0,1.1,2.1 \
        <(LC_ALL=C sort -k 2 "$FILE") <(LC_ALL=C sort -k 2 "$MANIFEST") |
        awk '$2 != $3 { if ($3 == "MISSING") w = "not written now";
                        else if ($2 == "MISSING") w = "new (not in the manifest)";
                        else w = "differs"; print "  " $1 ": " w }')
    if [ -n "$bad" ]; then
        echo "structure_check: FAIL, $(echo "$bad" | wc -l) file(s) differ from $FILE:"
        echo "$bad"
        exit 1
    fi
    echo "structure_check: all $(wc -l <"$MANIFEST") files match $FILE"
    ;;
esac
