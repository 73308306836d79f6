#!/usr/bin/env bash
# mutate.sh - mutation testing of the physics (make mutate).
#
# Plants each mutation of test/mutations.txt, one at a time, in a copy of
# the tree (never in this one), rebuilds the CPU-only test binary, runs the
# mutation's tests and records the first that fails. Prints a table and
# exits non-zero when a mutation survives (no test fails), its text does not
# occur exactly once in its file (BROKEN PATTERN), or the build fails.
#
# Environment:
#   MUTATE_ONLY="id1 id2"  only these mutations
#   MUTATE_LIST=file       another mutation list (default test/mutations.txt)
#   MUTATE_PATTERNS_ONLY=1 only check that each mutation's text occurs exactly
#                          once in its file (seconds; make mutate-patterns, CI)
#   MUTATE_CFLAGS          compiler flags of the copy (default -O2: half the
#                          build time of the default -O3 -g, same arithmetic)
#   MUTATE_KEEP=1          keep the copy (its path is printed)
#   MUTATE_SOURCES         the test sources built into the binary (default the
#                          ones that hold physics tests and the checkpoint
#                          tests; the others take a third of the build and
#                          test the CLI, scenes, files)
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
list=${MUTATE_LIST:-$root/test/mutations.txt}
cflags=${MUTATE_CFLAGS:--O2}
jobs=$(nproc 2>/dev/null || echo 2)
start=$(date +%s)
# OpenMP threads that sleep instead of spinning at barriers: on a shared or
# busy machine spinning made the tests ten times slower (same results).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/firn_mutate.XXXXXX") || exit 1
cleanup() { [ "${MUTATE_KEEP:-0}" = 1 ] && echo "mutate: copy kept in $tmp" || rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# The working tree as git sees it (tracked files and untracked ones it does
# not ignore), without build outputs.
(cd "$root" && git ls-files -z --cached --others --exclude-standard |
     while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
     tar --null -T - -cf -) | tar -xf - -C "$tmp" || { echo "mutate: cannot copy the tree"; exit 1; }

# Only the test sources with physics tests are built.
keep=${MUTATE_SOURCES:-test_kernels.c test_world.c test_coupling.c test_physics.c test_reference.c test_sph.c test_pbd.c test_checkpoint.c test_tool.c test_fem_stress.c test_fem.c test_fem_implicit.c test_fem_coupling.c test_fem_world.c test_pbf.c test_surface.c test_gpu.c test_momentum.c test_overlap.c test_output.c}
for t in "$tmp"/test/*.c; do
    [[ " $keep " == *" $(basename "$t") "* ]] || rm -f "$t"
done

build() { make -C "$tmp" -s CUDA=0 CFLAGS="$cflags" -j"$jobs" build/test_firn >"$tmp/build.log" 2>&1; }

# Runs the tests matching filter $1; sets `first` to the first failing test
# (suite/name), empty if none failed, and `ran` to the number run.
run_tests() {
    local out rc
    out=$(cd "$tmp" && timeout 900 build/test_firn --filter "$1" --jobs 1 --fail-fast \
              --color=never -S 2>&1)
    rc=$?
    ran=$(printf '%s\n' "$out" | sed -n 's/.*Tested: \([0-9]*\).*/\1/p' | tail -n 1)
    first=$(printf '%s\n' "$out" | sed -n 's/^\[FAIL\] \([^:]*\)::\([^:]*\):.*/\1\/\2/p' | head -n 1)
    if [ "$rc" = 124 ]; then
        first="${first:-timeout (900 s)}"
    elif [ "$rc" != 0 ] && [ -z "$first" ]; then
        first="exit status $rc"
    fi
    [ -n "$ran" ] || ran=0
}

# Mutation lines: id <TAB> file <TAB> original <TAB> replacement <TAB>
# filter <TAB> description; \n in the texts is a newline.
ids=() files=() froms=() tos=() filters=() descs=()
while IFS=$'\t' read -r id file from to filter desc; do
    case "$id" in '' | '#'*) continue ;; esac
    if [ -n "${MUTATE_ONLY:-}" ] && [[ " $MUTATE_ONLY " != *" $id "* ]]; then
        continue
    fi
    ids+=("$id") files+=("$file") froms+=("$from") tos+=("$to") filters+=("$filter")
    descs+=("$desc")
done <"$list"
[ "${#ids[@]}" -gt 0 ] || { echo "mutate: no mutations in $list"; exit 1; }

# Counts the literal $FROM (\n for newlines) in file $1; the count is the
# exit status (255: no file).
count_from() {
    perl -e 'my $from = $ENV{FROM}; $from =~ s/\\n/\n/g;
        local $/; open(my $in, "<", $ARGV[0]) or exit 255; my $text = <$in>;
        my $n = () = $text =~ /\Q$from\E/g; exit($n > 254 ? 254 : $n)' "$1"
}
if [ "${MUTATE_PATTERNS_ONLY:-0}" = 1 ]; then
    bad=0
    for k in "${!ids[@]}"; do
        FROM=${froms[$k]} count_from "$root/${files[$k]}"
        n=$?
        if [ "$n" != 1 ]; then
            echo "mutate: ${ids[$k]}: BROKEN PATTERN ($n matches in ${files[$k]})"
            bad=$((bad + 1))
        fi
    done
    echo "mutate: ${#ids[@]} mutations, $bad broken pattern(s)"
    [ "$bad" = 0 ]
    exit
fi

echo "mutate: ${#ids[@]} mutations, copy in $tmp, CFLAGS=$cflags"
if ! build; then
    cat "$tmp/build.log"
    echo "mutate: the unmutated tree does not build"
    exit 1
fi
# Every filter must pass on the unmutated tree, or a failure proves nothing.
# The filters, each once, in groups whose pattern stays under 1500
# characters: Criterion aborts on a --filter pattern of about 2 kB
# (extglobmatch.c: handle_operator), which the 211 filters joined passed.
total=0 group=""
run_group() {
    [ -n "$group" ] || return 0
    run_tests "@(${group%|})"
    total=$((total + ran))
    if [ -n "$first" ]; then
        echo "mutate: the unmutated tree fails $first"
        exit 1
    fi
    group=""
}
declare -A seen=()
for f in "${filters[@]}"; do
    [ -z "${seen[$f]:-}" ] || continue
    seen[$f]=1
    [ $((${#group} + ${#f})) -lt 1500 ] || run_group
    group+="$f|"
done
run_group
echo "mutate: unmutated tree passes the $total tests the mutations use ($(($(date +%s) - start)) s)"

results=() bad=0
for k in "${!ids[@]}"; do
    t0=$(date +%s)
    f="$tmp/${files[$k]}"
    cp "$f" "$tmp/orig" || { results+=("NO FILE ${files[$k]}"); bad=$((bad + 1)); continue; }
    # Literal replacement; the count of matches is the exit status.
    FROM=${froms[$k]} TO=${tos[$k]} perl -e '
        my ($from, $to) = map { (my $s = $_) =~ s/\\n/\n/g; $s } ($ENV{FROM}, $ENV{TO});
        local $/; open(my $in, "<", $ARGV[0]) or exit 255; my $text = <$in>; close $in;
        my $n = () = $text =~ /\Q$from\E/g;
        if ($n == 1) {
            $text =~ s/\Q$from\E/$to/;
            open(my $out, ">", $ARGV[0]) or exit 255; print $out $text; close $out;
        }
        exit($n > 254 ? 254 : $n)' "$f"
    matches=$?
    if [ "$matches" != 1 ]; then
        r="BROKEN PATTERN ($matches matches)"
        bad=$((bad + 1))
    elif ! build; then
        r="BUILD FAILED: $(grep -m1 -i error "$tmp/build.log")"
        bad=$((bad + 1))
    else
        run_tests "${filters[$k]}"
        if [ -n "$first" ]; then
            r="caught by $first"
        elif [ "$ran" = 0 ]; then
            r="NO TESTS match ${filters[$k]}"
            bad=$((bad + 1))
        else
            r="SURVIVED ($ran tests)"
            bad=$((bad + 1))
        fi
    fi
    cp "$tmp/orig" "$f"
    results+=("$r")
    printf '  %-28s %s (%d s)\n' "${ids[$k]}" "$r" $(($(date +%s) - t0))
done

echo
printf '%-28s | %-58s | %s\n' "mutation" "description" "result"
printf '%s\n' "-----------------------------|------------------------------------------------------------|-------"
for k in "${!ids[@]}"; do
    printf '%-28s | %-58s | %s\n' "${ids[$k]}" "${descs[$k]}" "${results[$k]}"
done
echo
echo "mutate: ${#ids[@]} mutations, $((${#ids[@]} - bad)) caught, $bad not; $(($(date +%s) - start)) s"
[ "$bad" = 0 ]
