#!/usr/bin/env python3
"""deps_cycles.py - the include/call circles among firn's modules (make deps-check).

A module is a source with its header of the same name: host/X.c with
host/X.h, kernels/X.cu with kernels/X.cuh, and a header alone
(include/firn_mpm.h, host/cli.h) is a module too. The graph has an edge
A -> B when

  - a file of A includes a header of B (#include, read as text: both sides
    of an #if count), or
  - an object of A (BUILD/host/A.o, BUILD/kernels/A.o) has an undefined
    symbol that an object of B defines (nm; only the project's names, which
    hold "firn", and no weak definition, the inline functions of C++ that
    every object may carry).

The call edges are those of the build given (--build, repeatable): a
CPU-only build has no kernels/ objects and none of the host's calls into
them, a CUDA (or emulated CUDA) build has both.

Every strongly connected component of more than one module is a circle: it
is printed with the edges inside it and why each is there (the headers
included, the symbols used). An allow-list (--allow FILE) names edges
"A -> B" known to close a circle: they are taken out of the graph before
the circles are sought, so that only a circle that needs no listed edge
fails. "A -> B includes" allows the edge only while all it holds is
includes: a call from A into B puts it back. A listed edge that no longer
exists is reported, to be taken off.

Exit status: 0 without circles, 1 with one or more, 2 on a usage error.
"""

import argparse
import os
import re
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DIRS = ("host", "include", "kernels")
SOURCE_EXT = (".c", ".cu")
HEADER_EXT = (".h", ".cuh")
# The compiler's search path (-Iinclude -Ihost) after the including file's folder.
SEARCH = ("include", "host", "kernels")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)


def module_of(path):
    """host/world.c and host/world.h -> host/world."""
    return os.path.splitext(path)[0]


def list_files():
    files = []
    for d in DIRS:
        for name in sorted(os.listdir(os.path.join(ROOT, d))):
            if name.endswith(SOURCE_EXT + HEADER_EXT):
                files.append(f"{d}/{name}")
    return files


def resolve(including, target, known):
    for d in (os.path.dirname(including),) + SEARCH:
        cand = os.path.normpath(os.path.join(d, target))
        if cand in known:
            return cand
    return None


def include_edges(files):
    known = set(files)
    edges = defaultdict(set)  # (A, B) -> reasons
    for f in files:
        with open(os.path.join(ROOT, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for target in INCLUDE_RE.findall(text):
            hit = resolve(f, target, known)
            if hit is None:
                continue
            a, b = module_of(f), module_of(hit)
            if a != b:
                edges[(a, b)].add(f"{f} includes {hit}")
    return edges


def nm_symbols(obj):
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = {}, set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind in "TDBRCGS" and "firn" in name:  # global, strong and the project's
            defined[name] = kind
    return defined, undefined


def call_edges(builds, modules):
    """Edges from the objects BUILD/host/*.o and BUILD/kernels/*.o."""
    edges = defaultdict(set)
    objects = 0
    read = set()  # the modules whose objects were read
    for build in builds:
        defs, undefs = {}, {}
        for d in ("host", "kernels"):
            od = os.path.join(build, d)
            if not os.path.isdir(od):
                continue
            for name in sorted(os.listdir(od)):
                if not name.endswith(".o"):
                    continue
                mod = f"{d}/{name[:-2]}"
                if mod not in modules:
                    continue  # an object of a source no longer here
                defined, undefined = nm_symbols(os.path.join(od, name))
                objects += 1
                read.add(mod)
                undefs[mod] = undefined
                for sym, kind in defined.items():
                    defs[sym] = (mod, kind)
        for a, undefined in undefs.items():
            for sym in undefined:
                if sym not in defs:
                    continue  # libc, OpenMP, cJSON, the CUDA runtime
                b, kind = defs[sym]
                if a != b:
                    what = "calls" if kind == "T" else "uses"
                    edges[(a, b)].add(f"{a} {what} {sym}")
    return edges, objects, read


def sccs(nodes, succ):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(succ.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(succ.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def shortest_cycle(comp, succ):
    """A shortest circle through the component's first module (BFS)."""
    start = comp[0]
    members = set(comp)
    prev = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(succ.get(v, ())):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return [start]


def read_allow(path):
    allowed = {}
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.fullmatch(r"(\S+)\s*->\s*(\S+)(\s+includes)?", line)
            if not m:
                sys.exit(f"deps_cycles: {path}:{n}: expected 'A -> B' or 'A -> B includes', "
                         f"got '{line}'")
            allowed[(m.group(1), m.group(2))] = (n, bool(m.group(3)))
    return allowed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", action="append", default=[],
                    help="a build folder whose host/ and kernels/ objects give the calls "
                         "(repeatable; default build)")
    ap.add_argument("--allow", help="a file of edges 'A -> B' known to close circles")
    ap.add_argument("--includes-only", action="store_true", help="no call edges (no build)")
    ap.add_argument("--calls-only", action="store_true", help="no include edges")
    ap.add_argument("--edges", action="store_true", help="print every edge of the graph")
    args = ap.parse_args()
    os.chdir(ROOT)

    files = list_files()
    modules = sorted({module_of(f) for f in files})
    edges = include_edges(files) if not args.calls_only else defaultdict(set)
    objects, read = 0, set()
    if not args.includes_only:
        builds = args.build or ["build"]
        for b in builds:
            if not os.path.isdir(os.path.join(b, "host")):
                sys.stderr.write(f"deps_cycles: no objects in {b}/host (build first, or --includes-only)\n")
                return 2
        calls, objects, read = call_edges(builds, set(modules))
        for k, v in calls.items():
            edges[k] |= v

    allowed = read_allow(args.allow) if args.allow else {}
    for (a, b), (line, includes_only) in sorted(allowed.items(), key=lambda kv: kv[1]):
        # A call edge between modules of which no object was read (kernels/
        # in a CPU-only build) cannot be seen here.
        unseen = not includes_only and not (a in read and b in read)
        if (a, b) not in edges and not unseen:
            print(f"deps_cycles: note: {args.allow}:{line}: '{a} -> {b}' is no longer an edge: "
                  "take it off the list")

    def is_allowed(a, b):
        if (a, b) not in allowed:
            return False
        includes_only = allowed[(a, b)][1]
        return not includes_only or all(" includes " in r for r in edges[(a, b)])

    succ = defaultdict(set)
    for (a, b) in edges:
        if not is_allowed(a, b):
            succ[a].add(b)
    if args.edges:
        for (a, b) in sorted(edges):
            tag = " (allowed)" if is_allowed(a, b) else ""
            print(f"{a} -> {b}{tag}: " + "; ".join(sorted(edges[(a, b)])))

    circles = [c for c in sccs(modules, succ) if len(c) > 1]
    circles.sort(key=lambda c: (-len(c), c))
    print(f"deps_cycles: {len(modules)} modules, {len(edges)} edges "
          f"({objects} objects read{', ' + str(len(allowed)) + ' edges allowed' if allowed else ''}), "
          f"{len(circles)} circle(s)")
    for i, comp in enumerate(circles, 1):
        print(f"\ncircle {i}: {len(comp)} modules: {' '.join(comp)}")
        print("  e.g. " + " -> ".join(shortest_cycle(comp, succ)))
        members = set(comp)
        for a in comp:
            for b in sorted(succ[a] & members):
                reasons = sorted(edges[(a, b)])
                shown = "; ".join(reasons[:4]) + (f"; and {len(reasons) - 4} more" if len(reasons) > 4 else "")
                print(f"  {a} -> {b}: {shown}")
    return 1 if circles else 0


if __name__ == "__main__":
    sys.exit(main())
