#!/usr/bin/env python3
"""mutate.py - make emu-mutate: plants classic CUDA bugs in a copy of the
tree, one at a time, builds the emulated backend, runs a check and names
what caught each bug: the emulated runtime (firn-emu), ASan, UBSan, TSan,
firn's own CUDA error checks, or firn compare's numbers. Prints a table and
exits non-zero when a bug went unseen or a plant did not apply.

The data race (a plain += where an atomic is needed) is invisible to ASan;
it is checked in a second emulated build under ThreadSanitizer
(EMU_SAN=-fsanitize=thread), with the CPU path held to one thread so that
only the emulator's block pool runs in parallel.

EMU_MUTATE_ONLY="id1 id2" plants only those bugs (and builds the TSan
backend only when one of them needs it)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (id, bug, file, original text, planted text, check)
# Checks: "compare:<scene>" runs firn compare on a shipped scene for one
# frame (its default P2G, atomic at the shipped scenes' sizes);
# "compare_<variant>:<scene>" the same with --p2g <variant>; "tsan:<scene>" runs
# it on the GPU backend alone in the TSan build; "test:<filter>" runs the
# emulated build's GPU tests that match the Criterion filter (a bug whose
# effect the solver's own iterations hide from a frame's numbers, such as a
# Newton loop converging to its tolerance from a worse direction, shows in
# the tests' iteration counts).
#
# Not planted: a read one element past the end of an array that is carved
# from a larger allocation (the particle arrays, the MPM-PBD keys): neither
# the emulated runtime nor compute-sanitizer sees it (docs/EMULATION.md,
# "What emulation does not prove").
PLANTS = [
    ("host-pointer", "a host pointer passed to a kernel (the host-side state for the device "
     "materials)", "kernels/mpm.cu",
     "FIRN_MPM_LAUNCH(p2g, s->model, pblocks, FIRN_BLOCK, 0, s->stream, *P, s->mats, s->p,\n"
     "                        s->grid);",
     "FIRN_MPM_LAUNCH(p2g, s->model, pblocks, FIRN_BLOCK, 0, s->stream, *P,\n"
     "                        (const firn_material *)s, s->p, s->grid);",
     "compare:sand_column"),
    ("tail-block", "missing tail-block bounds check in g2p (threads past the last particle "
     "run)", "kernels/mpm.cu",
     "    if (i < p.n && firn_g2p_particle(i, &P, p, g))",
     "    if (firn_g2p_particle(i, &P, p, g))",
     "compare:sand_column"),
    ("off-by-one", "off-by-one in the grid kernel's index bound (node <= nodes)",
     "kernels/mpm.cu",
     "    if (node < g.nodes)\n        firn_grid_node(node, &P, g);",
     "    if (node <= g.nodes)\n        firn_grid_node(node, &P, g);",
     "compare:sand_column"),
    ("copy-direction", "a copy in the wrong direction (download queued as host to device)",
     "kernels/mpm.cu",
     "copy_particles(&w->p, src, cudaMemcpyDeviceToHost, s->stream, parts, err)",
     "copy_particles(&w->p, src, cudaMemcpyHostToDevice, s->stream, parts, err)",
     "compare:sand_column"),
    ("default-stream", "work on the default stream (p2g launched on stream 0, the rest on the "
     "world's)", "kernels/mpm.cu",
     "FIRN_MPM_LAUNCH(p2g, s->model, pblocks, FIRN_BLOCK, 0, s->stream, *P, s->mats, s->p,\n"
     "                        s->grid);",
     "FIRN_MPM_LAUNCH(p2g, s->model, pblocks, FIRN_BLOCK, 0, 0, *P, s->mats, s->p,\n"
     "                        s->grid);",
     "compare:sand_column"),
    ("read-before-sync", "a result read on the host before the stream is synchronised (the "
     "non-finite word)", "kernels/mpm.cu",
     "cudaMemcpyDeviceToHost, s->stream),\n                    err);\n"
     "    FIRN_CUDA_CHECK(cudaStreamSynchronize(s->stream), err);\n    return 0;",
     "cudaMemcpyDeviceToHost, s->stream),\n                    err);\n    return 0;",
     "compare:sand_column"),
    ("plain-add-race", "a race: a plain += where P2G's scatter needs an atomic",
     "include/firn_hd.h",
     "    atomicAdd(addr, value);",
     "    *addr += value;",
     "tsan:sand_column"),
    ("cub-temp-small", "a CUB temporary buffer smaller than CUB asked for", "kernels/mpm.cu",
     "cudaMalloc(&s->red_temp, temp_bytes)",
     "cudaMalloc(&s->red_temp, temp_bytes / 2)",
     "compare:sand_column"),
    ("warp-divergence", "a lane returns before the warp shuffles of the rigid reduction",
     "kernels/coupling.cu",
     "    int has = node < g.nodes && firn_grid_velocity(node, &P, g, &v);",
     "    int has = node < g.nodes && firn_grid_velocity(node, &P, g, &v);\n"
     "    if (!has)\n        return;",
     "compare:bulldozer"),
    ("missing-barrier", "binned P2G flushes its shared tile to the grid without waiting for "
     "the block's other threads to finish scattering (the __syncthreads before the flush "
     "left out)", "kernels/mpm.cu",
     "            (void)most;\n        __syncthreads();\n        if constexpr (std::is_same<V, int>::value) {\n"
     "            tile_flush_fixed<FIRN_TILE>",
     "            (void)most;\n        if constexpr (std::is_same<V, int>::value) {\n"
     "            tile_flush_fixed<FIRN_TILE>",
     "compare_binned:sand_column"),
    ("bad-block-size", "a block of 2048 threads (over the 1024 limit)", "kernels/mpm.cu",
     "#define FIRN_BLOCK 256",
     "#define FIRN_BLOCK 2048",
     "compare:sand_column"),
    ("use-after-free", "device memory freed while the world still uses it (the grid, after "
     "the first run)", "kernels/mpm.cu",
     "    w->host_stale = FIRN_STALE_ALL;\n    account_time(w, s);",
     "    w->host_stale = FIRN_STALE_ALL;\n    account_time(w, s);\n"
     "    cudaFree(s->grid.node);",
     "compare:sand_column"),
    ("fem-mpm-no-scatter", "the FEM-MPM exchange kernel computes each vertex's common "
     "velocity but never scatters it back to the grid", "kernels/fem.cu",
     "        firn_fem_mpm_vertex(k, &S, &P, g, D);\n        firn_fem_mpm_scatter(k, &S, &P, g, D);",
     "        firn_fem_mpm_vertex(k, &S, &P, g, D);",
     "compare:fem_ball_sand"),
    ("ordered-cell-short", "ordered P2G's cell ranges end one particle early, so each cell's "
     "last particle scatters nothing", "kernels/mpm.cu",
     "        b.cend[key] = k + 1;",
     "        b.cend[key] = k;",
     "compare_ordered:sand_column"),
    ("sparse-no-halo", "the sparse grid lists only the blocks that hold particles' stencil "
     "corners, not the blocks next to them that the stencils also reach", "kernels/mpm.cu",
     "    for (int d = 0; d < 27; d++) {\n        const int bx = x + d / 9 - 1",
     "    for (int d = 13; d < 14; d++) {\n        const int bx = x + d / 9 - 1",
     "test:gpu/sparse_grid_equals_dense_with_ordered_p2g"),
    ("graph-key-count-only", "a call reuses the CUDA graphs captured for any call of the same "
     "substep count, whatever its dt and parameters", "kernels/mpm.cu",
     "        if (c->key.nsub && !memcmp(&c->key, &k, sizeof k))",
     "        if (c->key.nsub && c->key.nsub == k.nsub)",
     "test:gpu*/graphs*"),
    ("graph-skips-middle", "with CUDA graphs the timed middle substep of a call is not run",
     "kernels/mpm.cu",
     "        if (queue_substep(w, P, (unsigned)m, 1, err))\n            return FIRN_CUDA_FAILED;\n"
     "        if (g->after) {",
     "        if (g->after) {",
     "test:gpu*/graphs*"),
    ("tile-soa-stride", "binned P2G's struct-of-arrays tile: a node's components T^2 floats "
     "apart, not T^3 (they overlap the next rows' nodes)", "kernels/mpm.cu",
     "atomicAdd(tile + q * T * T * T + node, v[q]);",
     "atomicAdd(tile + q * T * T + node, v[q]);",
     "test:gpu/*"),
    ("lane-order-short", "binned P2G's lane order (runs of floor(n / 32)) drops the last n mod 32 particles "
     "of every bin of 32 or more", "kernels/mpm.cu",
     "const int run = (n + 31) / 32, k = (j % 32) * run + j / 32;",
     "const int run = n / 32 > 0 ? n / 32 : 1, k = (j % 32) * run + j / 32;",
     "test:gpu/*"),
    ("node-load-stride", "G2P reads a stencil row's nodes 3 floats apart, not 4",
     "include/firn_mpm.h",
     "            firn_load_node(nd + 4, n1);\n            firn_load_node(nd + 8, n2);",
     "            firn_load_node(nd + 3, n1);\n            firn_load_node(nd + 6, n2);",
     "test:gpu/*"),
    ("g2p2g-drops-far", "G2P2G drops the scatter of a particle that moved more than a cell "
     "(outside its bin's tile)", "kernels/mpm.cu",
     "            } else if (t < 0) {\n                firn_p2g_scatter_nodes(&P, to, &st, 0u);",
     "            } else if (t < 0) {\n                (void)to;",
     "test:gpu/g2p2g*"),
    ("binned-tile-unchecked", "binned P2G scatters every particle into its bin's shared tile, "
     "also one whose stencil corner is a cell outside the bin its key names (on a GPU, bin_keys "
     "and P2G may floor the corner differently)", "kernels/mpm.cu",
     "            } else if (t < 0) {\n                firn_p2g_scatter_nodes(&P, g, &st, 0u);\n"
     "            } else {\n                tile_scatter<FIRN_TILE>(&P, tile, t, &st);",
     "            } else {\n"
     "                const int u = ((st.s.base[0] - o[0]) * FIRN_TILE + st.s.base[1] - o[1]) *\n"
     "                                  FIRN_TILE + st.s.base[2] - o[2];\n"
     "                tile_scatter<FIRN_TILE>(&P, tile, u, &st);",
     "test:gpu/binned_p2g_with_keys*"),
    ("warp-run-by-key", "warp P2G sums a lane whose stencil corner is not its key's cell into "
     "that cell's run", "kernels/mpm.cu",
     "                if (t != key_tile_slot(key))\n                    key = -1 - lane;",
     "                if (t != t)\n                    key = -1 - lane;",
     "test:gpu/binned_p2g_with_keys*"),
    ("g2p2g-same-grid", "G2P2G gathers (through the read-only cache) from the grid it scatters "
     "into", "kernels/mpm.cu",
     "    from.node = s->gbuf[(s->gbase + k - 1) & 1];",
     "    from.node = s->gbuf[(s->gbase + k) & 1];",
     "test:gpu/g2p2g*"),
    ("reorder-download-unscattered", "with the particles reordered into the bin order on "
     "the device (FIRN_P2G_REORDER), the download copies the slots as they are instead of "
     "scattering them back through id to the scene's order", "kernels/mpm.cu",
     "        FIRN_CUDA_CHECK_LAUNCH(\"reorder_scatter\", s->stream, err);\n        src = &s->q;",
     "        FIRN_CUDA_CHECK_LAUNCH(\"reorder_scatter\", s->stream, err);",
     "test:gpu/reorder*"),
    ("reorder-bad-slot", "with the reorder on, G2P's non-finite report names the "
     "particle's slot on the device, not its index in the scene's order", "kernels/mpm.cu",
     "firn_cuda_bad_word(substep, id ? id[i] : i)",
     "firn_cuda_bad_word(substep, i)",
     "test:gpu/reorder*"),
    ("kernel-unsized", "a kernel left out of the MPM stack sizing table", "kernels/mpm.cu",
     "                                          FIRN_MPM_MODEL_KERNELS(g2p2g),\n",
     "",
     "test:gpu/every_mpm_kernel*"),
    ("int-soa-offset", "firn_store9 indexes component c of particle i with an int c n + i",
     "include/firn_mpm.h",
     "        a[firn_soa_index(c, n, i)] = m.m[c];",
     "        a[c * n + i] = m.m[c];",
     "test:soa/*"),
    ("g2p2g-grid-turn", "G2P2G's next call starts on the wrong one of its two grids",
     "kernels/mpm.cu",
     "        s->gbase = (s->gbase + nsub - 1) & 1;",
     "        s->gbase = (s->gbase + nsub) & 1;",
     "test:gpu/g2p2g*"),
    ("counting-rank-lost", "the counting sort's scatter ignores each particle's rank within "
     "its cell: the particles of a cell overwrite one place, the rest of its range keeps stale "
     "entries", "kernels/mpm.cu",
     "    const int key = b.key[i], k = b.coff[key] + b.ids[i];",
     "    const int key = b.key[i], k = b.coff[key];",
     "test:gpu/binning_keeps*"),
    ("bin-list-skips-single", "the list of bins P2G runs through leaves out the bins that hold "
     "one particle", "kernels/mpm.cu",
     "    b.bflag[bin] = b.start[bin] < b.end[bin];",
     "    b.bflag[bin] = b.start[bin] + 1 < b.end[bin];",
     "test:gpu/binning_keeps*"),
    ("bin-list-first-only", "binned P2G's blocks each take only the first listed bin they "
     "are given, not every gridDim-th one after it (on a list longer than the grid)",
     "kernels/mpm.cu",
     "    for (int item = blockIdx.x; item < *b.nbins; item += gridDim.x) {\n"
     "        const int bin = b.blist[item], lo = b.start[bin], hi = b.end[bin];\n"
     "        int o[3];\n        bin_origin(b, bin, o);\n        if (std::is_same<V, int>::value",
     "    for (int item = blockIdx.x; item < *b.nbins && item < (int)gridDim.x;\n"
     "         item += gridDim.x) {\n"
     "        const int bin = b.blist[item], lo = b.start[bin], hi = b.end[bin];\n"
     "        int o[3];\n        bin_origin(b, bin, o);\n        if (std::is_same<V, int>::value",
     "test:gpu/binning_keeps*"),
    ("g2p-drops-v-c", "the g2p kernel stores x but not v and C (G2P2G's skip of the stores "
     "reaching the call's last G2P)", "include/firn_mpm.h",
     "    return firn_g2p_particle_keep(i, P, p, g, &x, &v, &C, 1);",
     "    return firn_g2p_particle_keep(i, P, p, g, &x, &v, &C, 0);",
     "test:gpu/substep_matches_cpu*"),
    ("fixed-tile-unbounded", "the fixed-point tile takes every particle's values, also "
     "those past the range its scale allows", "kernels/mpm.cu",
     "    if (!(FIRN_FIXED_WMAX * st->mass * inv_qm <= lim && FIRN_FIXED_WMAX * inv_qp * B <= lim))\n"
     "        return 0;",
     "    (void)lim;",
     "test:gpu/fixed_tile*"),
    ("fixed-tile-quantum", "the fixed-point tile's flush scales a momentum by the mass "
     "quantum", "kernels/mpm.cu",
     "        const float v[4] = {(float)q[0] * f.qp,",
     "        const float v[4] = {(float)q[0] * f.qm,",
     "test:gpu/fixed_tile*"),
    ("fixed-tile-bound-lost", "binned P2G's fixed-point tile never records its bins' momentum "
     "bounds, so every bin scatters as floats", "kernels/mpm.cu",
     "            tile_flush_fixed<FIRN_TILE>(tile, o, g, *fs);\n            if (threadIdx.x == 0)\n"
     "                b.bound[bin] = __int_as_float(fs->most);",
     "            tile_flush_fixed<FIRN_TILE>(tile, o, g, *fs);",
     "test:gpu/fixed_tile*"),
    ("fem-sph-wall-unlaunched", "FEM-SPH's wall term is never launched on the GPU (the CPU runs "
     "it before the vertices' contact)", "kernels/fem.cu",
     "        if (W.fem_d && W.s.n > 0) {",
     "        if (W.fem_d && W.s.n < 0) {",
     "test:gpu_fem/fem_sph*"),
    ("fem-sph-faces-unlaunched", "FEM-SPH's nearest triangles are never searched on the GPU: "
     "every particle's key stays ~0 (no contact distance)", "kernels/fem.cu",
     "    if (S->surf.nf > 0) {",
     "    if (S->surf.nf < 0) {",
     "test:gpu_fem/fem_sph*"),
    ("pcg-past-stop", "the implicit FEM solve's CG update kernel ignores the device's stop flag, "
     "so the iterations queued after convergence keep moving du", "kernels/fem_implicit.cu",
     "        LAUNCH(imp_pcg_update, nv, I->ctl, I->p, I->Ap, I->Minv, I->held, I->du, I->r, I->z, n,\n"
     "               B->v0, B->v1, done);",
     "        LAUNCH(imp_pcg_update, nv, I->ctl, I->p, I->Ap, I->Minv, I->held, I->du, I->r, I->z, n,\n"
     "               B->v0, B->v1, (const int *)NULL);",
     "test:gpu_fem/implicit_*"),
    ("newton-max-ignored", "the implicit FEM's device check lets Newton run past newton_max, "
     "which only the host's cap then stops", "kernels/fem_implicit.cu",
     "    else if (it >= P.newton_max)",
     "    else if (it >= P.newton_max + 1000)",
     "test:gpu_fem/implicit_solve_stops*"),
    ("newton-never-stops", "the implicit FEM's device check never sets its stop flag: the host's "
     "cap must end the loop with an error, not hang", "kernels/fem_implicit.cu",
     "    if (gn <= P.newton_tol * c->g0)\n"
     "        c->newton_done = 1;\n"
     "    else if (c->step <= c->dx)\n"
     "        c->newton_done = 2;\n"
     "    else if (it >= P.newton_max)\n"
     "        c->newton_done = 3;\n",
     "",
     "test:gpu_fem/implicit_*"),
    ("dfsph-converged-work", "DFSPH's source-and-sum kernel keeps working after the solve "
     "converged (the iterations queued up to the cap do real work)", "kernels/sph.cu",
     "    __shared__ int last;\n"
     "    if (f->done)\n"
     "        return;\n",
     "    __shared__ int last;\n",
     "test:gpu_sph/dfsph_converged_iterations_do_no_work"),
    ("implicit-range-overrun", "the implicit FEM kernels' range check lets the threads of the "
     "last block past the body's last vertex or element run", "kernels/fem_implicit.cu",
     "    if (i >= last || (skip && *skip))",
     "    if (skip && *skip)",
     "compare:fem_rubber_cantilever"),
]

CAUGHT_BY = [
    (r"firn-emu: (.*)", "emulated runtime"),
    (r"ERROR: AddressSanitizer: ([\w-]+)", "ASan"),
    (r"WARNING: ThreadSanitizer: (data race)", "TSan"),
    (r"runtime error: (.*)", "UBSan"),
    (r"CUDA error at [^ ]+ (.*)", "firn's CUDA error check"),
    (r"  (\S.*FAIL.*)", "firn compare"),
    (r"\[FAIL\] (\S+)", "GPU test"),
]


def sh(cmd, cwd, env=None, timeout=1800):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, cwd=cwd, env=e, shell=True, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace")


def copy_tree(dst):
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                           stdout=subprocess.PIPE, check=True).stdout.decode().splitlines()
    for f in files:
        src = os.path.join(ROOT, f)
        if not os.path.isfile(src):
            continue
        os.makedirs(os.path.dirname(os.path.join(dst, f)) or dst, exist_ok=True)
        shutil.copy2(src, os.path.join(dst, f))


def run_check(check, tree):
    kind, scene = check.split(":")
    env = {"OMP_WAIT_POLICY": "passive", "ASAN_OPTIONS": "detect_leaks=0"}
    if kind == "test":
        # The tests that run the command line take it from FIRN_BIN.
        env["FIRN_BIN"] = "build/emu/firn"
        return sh(f"timeout 900 build/emu/test_firn --filter '{scene}' --jobs 1", tree, env)
    if kind == "compare" or kind.startswith("compare_"):
        extra = " --p2g " + kind[len("compare_"):] if kind != "compare" else ""
        return sh(f"timeout 600 build/emu/firn compare scenes/{scene}.json --frames 1{extra}", tree,
                  env)
    env.update({"OMP_NUM_THREADS": "1", "FIRN_EMU_THREADS": "2",
                "TSAN_OPTIONS": "halt_on_error=1 report_signal_unsafe=0"})
    return sh(f"timeout 900 build/emu-tsan/firn run scenes/{scene}.json --backend cuda "
              f"--frames 1 --quiet --out out/tsan", tree, env)


def caught(rc, out):
    """The first report in the output, and the kernel it happened in."""
    first = None
    for pat, who in CAUGHT_BY:
        for m in re.finditer(pat, out):
            if who == "emulated runtime" and m.group(1).startswith("in "):
                continue  # the context line the runtime adds to any report
            if first is None or m.start() < first[0]:
                first = (m.start(), who, m.group(1).strip())
            break
    if first:
        where = re.search(r"firn-emu: in kernel (\S+)", out)
        suffix = f" (in kernel {where.group(1)})" if where else ""
        return f"{first[1]}: {first[2][:100]}{suffix}"
    if rc != 0:
        return f"exit {rc} (no message recognised)"
    return None


def build(tree, tsan, tests=False):
    if tsan:
        return sh("make CUDA=emu EMU_BUILD=build/emu-tsan EMU_SAN='-fsanitize=thread' "
                  "-j$(nproc) build/emu-tsan/firn", tree)
    return sh("make CUDA=emu -j$(nproc) build/emu/firn" + (" build/emu/test_firn" if tests else ""),
              tree)


def patterns_only():
    """EMU_MUTATE_PATTERNS_ONLY=1 (make mutate-patterns, CI): each plant's
    text must occur exactly once in its file, so that a plant cannot go
    stale unseen when the code it names is edited."""
    bad = 0
    for pid, _bug, path, old, _new, _check in PLANTS:
        n = open(os.path.join(ROOT, path)).read().count(old)
        if n != 1:
            print(f"emu-mutate: plant {pid} matches {n} times in {path}")
            bad += 1
    print(f"emu-mutate: {len(PLANTS)} plants, {bad} broken pattern(s)")
    return 1 if bad else 0


def main():
    if os.environ.get("EMU_MUTATE_PATTERNS_ONLY") == "1":
        return patterns_only()
    t_start = time.time()
    only = os.environ.get("EMU_MUTATE_ONLY", "").split()
    plants = [p for p in PLANTS if not only or p[0] in only]
    if not plants:
        print(f"emu-mutate: no plant named {' '.join(only)}")
        return 2
    tree = tempfile.mkdtemp(prefix="firn-emu-mutate.")
    copy_tree(tree)
    print(f"emu-mutate: a copy of the tree in {tree}; building the ASan and TSan emulated "
          "backends", flush=True)
    sans = (False, True) if any(p[5].startswith("tsan") for p in plants) else (False,)
    tests = any(p[5].startswith("test") for p in plants)
    for tsan in sans:
        rc, out = build(tree, tsan, tests)
        if rc:
            print(out[-4000:])
            print("emu-mutate: the unplanted tree does not build")
            return 2
    # Every check must pass on the unplanted tree, or a "catch" means nothing.
    for check in sorted({p[5] for p in plants}):
        rc, out = run_check(check, tree)
        if rc != 0 or caught(rc, out):
            print(out[-4000:])
            print(f"emu-mutate: the check {check} fails without a planted bug")
            return 2
    rows, bad = [], 0
    for pid, bug, path, old, new, check in plants:
        t0 = time.time()
        full = os.path.join(tree, path)
        text = open(full).read()
        if text.count(old) != 1:
            rows.append((pid, bug, f"PLANT DID NOT APPLY ({text.count(old)} matches)", 0.0))
            bad += 1
            continue
        open(full, "w").write(text.replace(old, new))
        tsan = check.startswith("tsan")
        rc, out = build(tree, tsan, check.startswith("test"))
        if rc:
            verdict = "BUILD FAILED: " + out.strip().splitlines()[-1][:100]
            bad += 1
        else:
            rc, out = run_check(check, tree)
            verdict = caught(rc, out)
            if not verdict:
                verdict = "NOT CAUGHT"
                bad += 1
        open(full, "w").write(text)
        rows.append((pid, bug, verdict, time.time() - t0))
        print(f"  {pid}: {verdict}", flush=True)
    for tsan in sans:  # leave the copy's builds unplanted
        build(tree, tsan, tests)
    print()
    print("| planted bug | what | caught by | seconds |")
    print("|---|---|---|---|")
    for pid, bug, verdict, secs in rows:
        print(f"| {pid} | {bug} | {verdict.replace('|', '/')} | {secs:.0f} |")
    print(f"\nemu-mutate: {len(rows) - bad} of {len(rows)} planted bugs caught in "
          f"{time.time() - t_start:.0f} s (tree: {tree})")
    if bad == 0:
        shutil.rmtree(tree, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
