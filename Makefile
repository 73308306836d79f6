# firn - build the library, the command-line tool and the tests.
#
#   make demo       install missing Debian packages, build, run scenes/sand_column.json
#                   into out/sand_column/
#   make            build/firn, build/libfirn.a and build/libfirn.so (CUDA parts when
#                   nvcc is found); the shared library is what the Python package loads
#   make python-test  build/libfirn.so and the Python package's tests (python/, pytest)
#   make test       install missing packages, build, run the Criterion test suite
#   make deps       only install (or name) the missing Debian packages
#   make CUDA=0     force a CPU-only build
#   make CUDA_ARCH="-gencode arch=compute_90,code=sm_90"   override GPU targets
#   make DEBUG_SYNC=1   synchronize and check after every kernel launch
#   make emu        the CUDA code on the emulated runtime (test/emu/), under ASan and
#                   UBSan, in build/emu/ (docs/EMULATION.md); make emu-check runs its
#                   GPU tests, firn compare on every scene and a small bench
#   make emu-sectors  the same built by clang in build/emu-sectors/, the kernels' global
#                   loads and stores counted in 32-byte sectors (bench/emu_sectors.py)
#   make gpu-rehearsal  bench/gpu_check.sh's two device calls rehearsed on the
#                   emulated runtime, and the size of bench/pack_gpu.sh's bundle
#   make asan       the CPU build and the whole test suite under ASan and UBSan, in
#                   build/asan/
#   make MPI=1      firn with MPM across MPI ranks (mpirun -np N build/mpi/firn run SCENE),
#                   in build/mpi/ (docs/MPI.md); OpenMPI found by mpicc or pkg-config ompi-c
#   make mpi-test   the distributed run against one rank and against itself (test/mpi_test.sh)
#   make fuzz       libFuzzer targets for the scene, OBJ, TetGen, Gmsh and checkpoint
#                   readers (clang, ASan, UBSan, CPU only) and their seeds, in
#                   build/fuzz/ (test/fuzz/); make fuzz-smoke runs each for
#                   FUZZ_SECONDS (default 60)

CC      ?= gcc
ifeq ($(MPI),1)
BUILD   ?= build/mpi
endif
BUILD   ?= build
NVCC    ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
PKGS     = libcjson libpng
CFLAGS  ?= -O3 -g
override CFLAGS += -std=gnu11 -Wall -Wextra -Wshadow -fopenmp -fno-math-errno -Iinclude -Ihost \
           $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lcjson -lpng) -lm -fopenmp

ifeq ($(CUDA),0)
NVCC :=
endif
# The emulated CUDA runtime: kernels/*.cu built by the host C++ compiler
# against test/emu/, everything under ASan and UBSan (EMU_SAN).
EMU_BUILD ?= build/emu
ifeq ($(CUDA),emu)
NVCC     :=
BUILD    := $(EMU_BUILD)
CXX      ?= g++
EMU_SAN  ?= -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
override CFLAGS += $(EMU_SAN)
# EMU_COVERAGE=1 (clang, make emu-sectors): every load and store of the
# kernels' translation units calls the runtime's sanitizer-coverage hooks,
# which FIRN_EMU_PROFILE counts as 32-byte sectors per warp access.
ifeq ($(EMU_COVERAGE),1)
EMU_KERNEL_FLAGS = -fsanitize-coverage=func,trace-loads,trace-stores
endif
endif

# make MPI=1: host/dist_mpi.c and host/cli_mpi.c, built by mpicc (else with
# pkg-config's ompi-c); without it they are left out and nothing links MPI.
MPI_SRC  = host/dist_mpi.c host/cli_mpi.c
ifeq ($(MPI),1)
MPICC   ?= $(shell command -v mpicc 2>/dev/null)
ifneq ($(MPICC),)
CC      := $(MPICC)
else ifneq ($(shell pkg-config --exists ompi-c 2>/dev/null && echo yes),)
override CFLAGS += $(shell pkg-config --cflags ompi-c)
LDLIBS  += $(shell pkg-config --libs ompi-c)
else
$(error make MPI=1: neither mpicc nor pkg-config's ompi-c found; install libopenmpi-dev and openmpi-bin)
endif
override CFLAGS += -DFIRN_WITH_MPI
HOST_SRC = $(wildcard host/*.c)
else
HOST_SRC = $(filter-out $(MPI_SRC),$(wildcard host/*.c))
endif
HOST_OBJ = $(HOST_SRC:%.c=$(BUILD)/%.o)
TEST_SRC = $(wildcard test/*.c)
TEST_OBJ = $(TEST_SRC:%.c=$(BUILD)/%.o)

# The kernels' host code is position-independent (-fPIC above), so that the
# same objects go into libfirn.a and libfirn.so.
ifneq ($(NVCC),)
CUDA_HOME  ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_ARCH  ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
              -gencode arch=compute_90,code=compute_90
NVCCFLAGS  ?= -O3 -lineinfo
override NVCCFLAGS += -std=c++17 $(CUDA_ARCH) -Iinclude -Ihost -Xcompiler -Wall,-Wextra \
              -Xcompiler -fPIC -DFIRN_WITH_CUDA
ifeq ($(DEBUG_SYNC),1)
override NVCCFLAGS += -DFIRN_DEBUG_SYNC
endif
override CFLAGS += -DFIRN_WITH_CUDA
CU_SRC      = $(wildcard kernels/*.cu)
CU_OBJ      = $(CU_SRC:%.cu=$(BUILD)/%.o)
LDLIBS     += -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/targets/x86_64-linux/lib -lcudart_static \
              -ldl -lrt -lpthread -lstdc++
BUILD_KIND  = CPU + CUDA ($(NVCC))
else ifeq ($(CUDA),emu)
override CFLAGS += -DFIRN_WITH_CUDA -DFIRN_EMU_BUILD
EMU_CXXFLAGS = -std=c++17 -x c++ -O2 -g $(EMU_SAN) -Wall -Wextra -DFIRN_WITH_CUDA \
               -DFIRN_EMU -Itest/emu -Iinclude -Ihost
CU_SRC      = $(wildcard kernels/*.cu)
CU_OBJ      = $(CU_SRC:%.cu=$(BUILD)/%.o) $(BUILD)/test/emu/runtime.o
LDLIBS     += -lstdc++ -lpthread
BUILD_KIND  = CPU + emulated CUDA (test/emu/, ASan and UBSan)
else
CU_OBJ      =
BUILD_KIND  = CPU only (nvcc not found: install the CUDA toolkit or set NVCC=/path/to/nvcc)
endif

DEB_PKGS = gcc make pkg-config libcjson-dev libpng-dev libcriterion-dev
# The tests also run bench/plot: with a python3 that has matplotlib (or
# FIRN_PYTHON), else with Debian's python3 and python3-matplotlib.
HAVE_MATPLOTLIB := $(shell { [ -n "$$FIRN_PYTHON" ] || python3 -c 'import matplotlib' ; } >/dev/null 2>&1 && echo yes)
TEST_DEB_PKGS = $(DEB_PKGS) $(if $(HAVE_MATPLOTLIB),,python3-matplotlib) \
                $(if $(HAVE_PY_TEST_DEPS),,python3-numpy python3-pytest)
# The Python package's tests (python/tests) run with FIRN_PYTHON, else the
# first of python3 and Debian's /usr/bin/python3 that has NumPy and pytest
# (python3-numpy, python3-pytest).
FIRN_PYTHON ?= $(firstword $(shell for p in python3 /usr/bin/python3; do \
    $$p -c 'import numpy, pytest' >/dev/null 2>&1 && echo $$p; done) python3)
HAVE_PY_TEST_DEPS := $(shell $(FIRN_PYTHON) -c 'import numpy, pytest' >/dev/null 2>&1 && echo yes)

.PHONY: mpi-test all test test-run python-test clean info deps demo emu emu-check emu-mutate tet-assets
# The shared library (the Python package's) is not built under sanitizers
# (the emulated runtime, make asan), which a Python process does not load.
all: info $(BUILD)/firn $(BUILD)/reorder_probe $(BUILD)/tool_press $(BUILD)/make_tet_assets \
     $(if $(findstring -fsanitize,$(CFLAGS)),,$(BUILD)/libfirn.so)

# Installs what is missing when run as root (or with sudo), else names the
# exact command to run.
deps:
	@missing=$$(for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done | xargs); \
	if [ -z "$$missing" ]; then echo "firn deps: all Debian packages present"; \
	elif [ "$$(id -u)" = 0 ]; then \
	  echo "firn deps: installing $$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing || \
	  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; }; \
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then \
	  sudo apt-get update -q && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	else echo "firn deps: missing Debian packages; run:  sudo apt-get install -y $$missing"; exit 1; fi
	@command -v nvcc >/dev/null || test -x /usr/local/cuda/bin/nvcc || \
	  echo "firn deps: nvcc not found: building the CPU path only (install the CUDA toolkit for the GPU backend)"

demo: deps
	$(MAKE) all
	$(BUILD)/firn run scenes/sand_column.json --out out/sand_column

info:
	@echo "firn build: $(BUILD_KIND)"

CLI_OBJ  = $(filter $(BUILD)/host/main.o $(BUILD)/host/cli_%.o,$(HOST_OBJ))

$(BUILD)/libfirn.a: $(filter-out $(CLI_OBJ),$(HOST_OBJ)) $(CU_OBJ)
	@mkdir -p $(@D)
	ar rcs $@ $^

$(BUILD)/firn: $(CLI_OBJ) $(BUILD)/libfirn.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: %.c $(wildcard include/*.h host/*.h test/*.h)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

# Its 32-byte vectors pass only between inlined helpers (see the file).
$(BUILD)/host/svd_batch.o: override CFLAGS += -Wno-psabi
# Its ifunc resolver runs before ThreadSanitizer starts, so not under it.
ifneq (,$(findstring thread,$(EMU_SAN)))
$(BUILD)/host/svd_batch.o: override CFLAGS += -fno-sanitize=thread
endif

ifeq ($(CUDA),emu)
# As nvcc does, every .cu sees cuda_runtime.h (here the emulated one).
$(BUILD)/kernels/%.o: kernels/%.cu $(wildcard include/*.h host/*.h kernels/*.cuh test/emu/*.h) \
                      $(wildcard test/emu/*/*/*.h test/emu/*/*/*.cuh)
	@mkdir -p $(@D)
	$(CXX) $(EMU_CXXFLAGS) $(EMU_KERNEL_FLAGS) -include cuda_runtime.h -c -o $@ $<

$(BUILD)/test/emu/runtime.o: test/emu/runtime.cpp test/emu/cuda_runtime.h
	@mkdir -p $(@D)
	$(CXX) $(EMU_CXXFLAGS) -c -o $@ $<
else
$(BUILD)/kernels/%.o: kernels/%.cu $(wildcard include/*.h host/*.h kernels/*.cuh)
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -c -o $@ $<
endif

$(BUILD)/test_firn: $(TEST_OBJ) $(BUILD)/libfirn.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lcriterion

# Measures the CPU path's state reordering (bench/results/cpu-2026-12-03.md).
$(BUILD)/reorder_probe: $(BUILD)/bench/reorder_probe.o $(BUILD)/libfirn.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Counts firn_svd3's Jacobi sweeps (docs/BENCH_LOG.md, "The SVD's sweeps").
$(BUILD)/svd_sweeps: $(BUILD)/bench/svd_sweeps.o
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lm

# The C example: a tool driven by a force controller (examples/tool_press.c).
$(BUILD)/tool_press: $(BUILD)/examples/tool_press.o $(BUILD)/libfirn.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The FEM meshes in scenes/assets, written by firn's own generators
# (scenes/assets/make_tet_assets.c); make tet-assets writes them again.
$(BUILD)/make_tet_assets: $(BUILD)/scenes/assets/make_tet_assets.o $(BUILD)/libfirn.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

tet-assets: $(BUILD)/make_tet_assets
	$(BUILD)/make_tet_assets scenes/assets

# Tests call the CLI too, so both are built first.
test:
	$(MAKE) deps DEB_PKGS="$(TEST_DEB_PKGS)"
	$(MAKE) all $(BUILD)/test_firn
	$(MAKE) test-run
	$(MAKE) python-test

# The Python package (python/firn) against this build's libfirn.so and CLI:
# its tests and examples (docs/PYTHON.md), with the interpreter's own NumPy
# and pytest, nothing installed.
python-test: $(BUILD)/libfirn.so $(BUILD)/firn
	cd python && OMP_WAIT_POLICY=passive FIRN_LIB=$(CURDIR)/$(BUILD)/libfirn.so \
	    FIRN_BIN=$(CURDIR)/$(BUILD)/firn PYTHONPATH=. $(FIRN_PYTHON) -m pytest -q -p no:cacheprovider tests

# `pip install ./python` into a fresh venv (over the system's NumPy, offline:
# no build isolation, no downloads), then a frame of a scene and the pytest
# suite (the examples among it) through the installed package.
.PHONY: python-venv-check
python-venv-check: $(BUILD)/libfirn.so
	rm -rf $(BUILD)/pyvenv && $(FIRN_PYTHON) -m venv --system-site-packages $(BUILD)/pyvenv
	$(BUILD)/pyvenv/bin/python -m pip install -q --no-build-isolation --no-deps --no-index ./python
	rm -rf python/build python/firn.egg-info
	cd $(BUILD) && OMP_WAIT_POLICY=passive FIRN_LIB=$(CURDIR)/$(BUILD)/libfirn.so pyvenv/bin/python -c \
	    'import firn; w = firn.World(firn.Scene.from_json("$(CURDIR)/scenes/fem_jelly_drop.json"), backend="cpu"); \
	     w.step(); print("python-venv-check:", firn.__file__, "frame", w.frame, "t =", w.time)'
	cd $(BUILD) && OMP_WAIT_POLICY=passive FIRN_LIB=$(CURDIR)/$(BUILD)/libfirn.so FIRN_BIN=$(CURDIR)/$(BUILD)/firn \
	    pyvenv/bin/python -c 'import firn, sys; sys.exit("python-venv-check: firn imported from " + firn.__file__) \
	        if "/pyvenv/" not in firn.__file__ else None'
	cd $(BUILD) && OMP_WAIT_POLICY=passive FIRN_LIB=$(CURDIR)/$(BUILD)/libfirn.so FIRN_BIN=$(CURDIR)/$(BUILD)/firn \
	    pyvenv/bin/python -m pytest -q -p no:cacheprovider $(CURDIR)/python/tests

# The Python controller example against the C one at full size (about 5 CPU
# minutes; not in CI): the same lines, frame by frame.
.PHONY: python-example-check
python-example-check: $(BUILD)/libfirn.so $(BUILD)/tool_press
	OMP_WAIT_POLICY=passive $(BUILD)/tool_press > $(BUILD)/tool_press_c.txt 2> $(BUILD)/tool_press_c.err
	OMP_WAIT_POLICY=passive FIRN_LIB=$(CURDIR)/$(BUILD)/libfirn.so PYTHONPATH=python \
	    $(FIRN_PYTHON) examples/python/tool_press.py > $(BUILD)/tool_press_py.txt 2> $(BUILD)/tool_press_py.err
	cmp $(BUILD)/tool_press_c.txt $(BUILD)/tool_press_py.txt && cmp $(BUILD)/tool_press_c.err $(BUILD)/tool_press_py.err && \
	    echo "python-example-check: examples/python/tool_press.py prints what build/tool_press prints"

# Passive OpenMP waits: spinning threads between parallel regions slowed the
# suite 10-40x on a loaded 2-core machine.
test-run:
	OMP_WAIT_POLICY=passive FIRN_BIN=$(BUILD)/firn ./$(BUILD)/test_firn --jobs 1

clean:
	rm -rf $(BUILD)

# The CUDA code on the emulated runtime: build, then (emu-check) the GPU
# tests, firn compare on every shipped scene and a small bench against it.
emu:
	$(MAKE) CUDA=emu all $(EMU_BUILD)/test_firn

# Plants classic CUDA bugs one at a time in a copy of the tree and names the
# check that catches each (test/emu/mutate.py; not in CI: about 15 minutes).
emu-mutate:
	python3 test/emu/mutate.py

emu-check: emu
	bash test/emu/check.sh

# The emulated runtime built by clang with the kernels' loads and stores
# traced (EMU_COVERAGE), for FIRN_EMU_PROFILE's global-memory sectors
# (bench/emu_sectors.py, docs/BENCH.md); a measurement build, not in CI.
EMU_SECTORS_BUILD ?= build/emu-sectors
.PHONY: emu-sectors
emu-sectors:
	$(MAKE) CUDA=emu CC=clang CXX=clang++ EMU_COVERAGE=1 EMU_BUILD=$(EMU_SECTORS_BUILD) \
	    LDFLAGS=-fsanitize-link-c++-runtime all

# The GPU check's device window rehearsed on the emulated runtime (CI): the
# bundle's size, both calls of bench/gpu_check.sh scaled down, $OUT within the
# device tool's limits, the plan within each call's budget (bench/rehearsal.sh).
.PHONY: gpu-rehearsal
gpu-rehearsal: emu
	bash bench/rehearsal.sh

# Rigid bodies floating on PBD liquid (position based fluids) against
# Archimedes (test/validate_pbf_buoyancy.py, docs/VALIDATION.md "PBD liquid
# buoyancy"; not in CI): box, sphere and cylinder at relative densities 0.3,
# 0.5, 0.7, a few minutes a case on 2 cores. VALIDATE_PBF_BUOYANCY_ARGS passes
# options (--ps, --shapes, --densities, --frames, --average, --viscosity).
.PHONY: validate-pbf-buoyancy
validate-pbf-buoyancy: $(BUILD)/firn
	python3 test/validate_pbf_buoyancy.py --firn $(BUILD)/firn \
	    --out $(BUILD)/validate_pbf_buoyancy $(VALIDATE_PBF_BUOYANCY_ARGS)

# Granular column collapses on the CPU path against Lube et al.'s laws
# (test/validate_sand.py, docs/VALIDATION.md; not in CI). Coarse (8 cells
# across the column): about a minute on 2 cores; FINE=1 adds 16 cells (8 times
# the work: of order half an hour). VALIDATE_SAND_ARGS passes options
# (--cone-fit, --floor, --phi, --cases, --jobs, --threads, --res).
ifeq ($(FINE),1)
VALIDATE_SAND_RES = 8,16
else
VALIDATE_SAND_RES = 8
endif
.PHONY: validate-sand
validate-sand: $(BUILD)/firn
	python3 test/validate_sand.py --firn $(BUILD)/firn --res $(VALIDATE_SAND_RES) \
	    --out $(BUILD)/validate_sand $(VALIDATE_SAND_ARGS)

# Rigid bodies floating on SPH water against Archimedes (test/validate_buoyancy.py,
# docs/VALIDATION.md; not in CI): box, sphere, cylinder and a box as an OBJ mesh
# at relative densities 0.3, 0.5, 0.7, with WCSPH then DFSPH, about 20 s a case
# on 2 cores. VALIDATE_BUOYANCY_ARGS passes options (--jobs, --ps, --shapes,
# --densities, --frames, --submerged).
.PHONY: validate-buoyancy
validate-buoyancy: $(BUILD)/firn
	for s in wcsph dfsph; do \
	  python3 test/validate_buoyancy.py --firn $(BUILD)/firn --out $(BUILD)/validate_buoyancy_$$s \
	      --solver $$s $(VALIDATE_BUOYANCY_ARGS) || exit 1; done

# MPM elastic and FEM bodies floating on SPH water against Archimedes
# (test/validate_buoyancy_bodies.py, docs/VALIDATION.md "MPM and FEM bodies";
# not in CI): both bodies, both pressure solvers, box and sphere (and an MPM
# cylinder) at 0.3, 0.5, 0.7, 1.5 s each, one to two minutes a case on 2 cores.
# VALIDATE_BUOYANCY_BODIES_ARGS adds options (--ps, --dx, --shapes, --densities).
.PHONY: validate-buoyancy-bodies
validate-buoyancy-bodies: $(BUILD)/firn
	for body in mpm fem; do for solver in wcsph dfsph; do \
	    python3 test/validate_buoyancy_bodies.py --firn $(BUILD)/firn --body $$body \
	        --solver $$solver --out $(BUILD)/validate_buoyancy_bodies \
	        $(VALIDATE_BUOYANCY_BODIES_ARGS) || exit 1; done; done

# Bodies floating on MPM liquid against Archimedes (test/validate_buoyancy_mpm.py,
# docs/VALIDATION.md "MPM liquid buoyancy"; not in CI): rigid bodies (analytic
# box, sphere, cylinder; a mesh box), MPM elastic and FEM bodies (box, sphere)
# at relative densities 0.3, 0.5, 0.7 on a pool of the MPM liquid model, dx
# 0.02 m, 1.5 s each: 10 to 60 s a case on 2 cores, about 15 minutes in all.
# VALIDATE_BUOYANCY_MPM_ARGS adds options (--dx, --frames, --cpic, --shapes,
# --densities, --liquid-E, --dt, --softness; --held F: the force on a body
# held F submerged); --dx 0.01 takes about 5 minutes a case.
.PHONY: validate-buoyancy-mpm
validate-buoyancy-mpm: $(BUILD)/firn
	python3 test/validate_buoyancy_mpm.py --firn $(BUILD)/firn --body rigid \
	    --out $(BUILD)/validate_buoyancy_mpm $(VALIDATE_BUOYANCY_MPM_ARGS)
	for body in 'rigid --mesh' mpm fem; do \
	    python3 test/validate_buoyancy_mpm.py --firn $(BUILD)/firn --body $$body \
	        --out $(BUILD)/validate_buoyancy_mpm $(VALIDATE_BUOYANCY_MPM_ARGS) || exit 1; done

# A refactor changes nothing but the structure (test/structure_check.sh):
# every shipped scene 3 frames on the CPU path, a sha256 per output file
# (PLY, VTU, previews, stats.jsonl less its wall-clock fields), about 35 s
# on 2 cores. `make structure-save` before the change writes the manifest
# STRUCTURE_MANIFEST, `make structure-check` after it names every file that
# differs. `make structure-threads` (CI) checks that 2 OpenMP threads write
# the same bits as 1.
STRUCTURE_MANIFEST ?= $(BUILD)/structure-manifest.txt
.PHONY: structure-save structure-check structure-threads
structure-save: $(BUILD)/firn
	bash test/structure_check.sh --firn $(BUILD)/firn --save $(STRUCTURE_MANIFEST)

structure-check: $(BUILD)/firn
	bash test/structure_check.sh --firn $(BUILD)/firn --check $(STRUCTURE_MANIFEST)

structure-threads: $(BUILD)/firn
	bash test/structure_check.sh --firn $(BUILD)/firn --threads 1 --save $(BUILD)/structure-threads-1.txt
	bash test/structure_check.sh --firn $(BUILD)/firn --threads 2 --check $(BUILD)/structure-threads-1.txt

# The include/call circles among the modules of host/, kernels/ and include/
# (test/deps_cycles.py): includes read from the sources, calls from nm on
# $(BUILD)'s objects (kernels/ too in a CUDA build). Fails on a circle that
# needs no edge of test/deps_allow.txt, the known ones.
.PHONY: deps-check
deps-check: $(BUILD)/firn
	python3 test/deps_cycles.py --build $(BUILD) --allow test/deps_allow.txt

# Plants physics mutations in a copy of the tree, one at a time (test/mutations.txt).
.PHONY: mutate
mutate:
	bash test/mutate.sh

# The distributed run (docs/MPI.md): firn built with MPI=1 on the CPU path in
# MPI_BUILD, run on 2 ranks against $(BUILD)/firn on one (test/mpi_test.sh).
# OpenMPI must be installed (libopenmpi-dev, openmpi-bin): without it this fails.
MPI_BUILD ?= build/mpi
mpi-test: $(BUILD)/firn
	$(MAKE) MPI=1 CUDA=0 BUILD=$(MPI_BUILD) $(MPI_BUILD)/firn
	ONE=$(BUILD)/firn MPI_FIRN=$(MPI_BUILD)/firn bash test/mpi_test.sh

# Only that each mutation's text occurs exactly once in its file (CI: a
# refactor that moves the text leaves the mutation planting nothing), and
# the same of the emulated runtime's plants (test/emu/mutate.py).
.PHONY: mutate-patterns
mutate-patterns:
	MUTATE_PATTERNS_ONLY=1 bash test/mutate.sh
	EMU_MUTATE_PATTERNS_ONLY=1 python3 test/emu/mutate.py

# The style of .clang-format over every C, CUDA and C++ source: `make format`
# rewrites them, `make format-check` (CI) lists the files that differ.
# Without a usable git (a tree without .git, or one owned by another user),
# the same sources are found by name.
FORMAT_SOURCES = $(shell git ls-files '*.c' '*.h' '*.cu' '*.cuh' '*.cpp' 2>/dev/null || \
    find bench examples host include kernels scenes test -type f \( -name '*.c' -o -name '*.h' \
    -o -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' \) | LC_ALL=C sort)
.PHONY: format format-check
format:
	clang-format -i $(FORMAT_SOURCES)

format-check:
	@bad=0; for f in $(FORMAT_SOURCES); do \
	    clang-format --dry-run -Werror "$$f" >/dev/null 2>&1 || { echo "format-check: $$f differs from .clang-format (run make format)"; bad=1; }; \
	done; \
	[ $$bad = 0 ] && echo "format-check: $(words $(FORMAT_SOURCES)) files follow .clang-format"; exit $$bad

# Fuzzing (test/fuzz/, docs/VALIDATION.md "Fuzzing the loaders"): libFuzzer
# targets, built by clang with ASan and UBSan on the CPU path (CUDA=0) into
# build/fuzz/, for the scene reader, the OBJ reader, the TetGen and Gmsh
# readers and the checkpoint loader. `make fuzz` builds them and their seed
# corpora (from scenes/, scenes/assets/, test/data/ and checkpoints that
# build/fuzz/firn writes of test/fuzz/checkpoint_scene.json); `make
# fuzz-smoke` (CI) runs each for FUZZ_SECONDS (default 60): any crash,
# sanitizer report, leak or input slower than FUZZ_TIMEOUT seconds fails it,
# the input kept in build/fuzz/artifacts/.
FUZZ_BUILD   ?= build/fuzz
FUZZ_CC      ?= clang
FUZZ_SAN     ?= -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_TARGETS  = scene obj tet gmsh checkpoint
FUZZ_SECONDS ?= 60
FUZZ_TIMEOUT ?= 20
FUZZ_FLAGS   ?=

.PHONY: fuzz fuzz-build fuzz-corpus fuzz-smoke
fuzz:
	$(MAKE) CUDA=0 CC=$(FUZZ_CC) BUILD=$(FUZZ_BUILD) \
	    CFLAGS="-O1 -g $(FUZZ_SAN) -fsanitize=fuzzer-no-link" fuzz-build
	$(MAKE) fuzz-corpus

# make fuzz's first step (BUILD=$(FUZZ_BUILD), CC=clang), not a target of its own.
fuzz-build: $(BUILD)/firn $(FUZZ_TARGETS:%=$(BUILD)/fuzz_%)

$(BUILD)/fuzz_%: test/fuzz/fuzz_%.c test/fuzz/fuzz_util.h $(BUILD)/libfirn.a
	$(CC) $(CFLAGS) -fsanitize=fuzzer -DFIRN_FUZZ_ASSETS='"$(CURDIR)/scenes/assets"' \
	    -DFIRN_FUZZ_SCENE='"$(CURDIR)/test/fuzz/checkpoint_scene.json"' \
	    $(LDFLAGS) -o $@ $< $(BUILD)/libfirn.a $(LDLIBS)

# Seeds: the shipped files as they are; TetGen pairs joined at '@'
# (test/fuzz/fuzz_tet.c); checkpoints of frames 1, 3 and 4 of the fuzz scene.
fuzz-corpus:
	@rm -rf $(FUZZ_BUILD)/seeds && mkdir -p $(addprefix $(FUZZ_BUILD)/seeds/,$(FUZZ_TARGETS))
	cp scenes/*.json scenes/large/*.json test/fuzz/checkpoint_scene.json test/fuzz/seeds/scene/* \
	    $(FUZZ_BUILD)/seeds/scene/
	cp scenes/assets/*.obj test/fuzz/seeds/obj/* $(FUZZ_BUILD)/seeds/obj/
	cp scenes/assets/*.msh test/data/*.msh test/fuzz/seeds/gmsh/* $(FUZZ_BUILD)/seeds/gmsh/
	{ cat scenes/assets/soft_ball.node; printf @; cat scenes/assets/soft_ball.ele; } \
	    > $(FUZZ_BUILD)/seeds/tet/soft_ball
	cp test/fuzz/seeds/tet/* $(FUZZ_BUILD)/seeds/tet/
	rm -rf $(FUZZ_BUILD)/ckpt && for n in 1 4; do \
	    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive $(FUZZ_BUILD)/firn run \
	        test/fuzz/checkpoint_scene.json --backend cpu --frames $$n --checkpoint-every 1 \
	        --out $(FUZZ_BUILD)/ckpt/$$n >/dev/null || exit 1; \
	    cp $(FUZZ_BUILD)/ckpt/$$n/checkpoint_*.firn $(FUZZ_BUILD)/seeds/checkpoint/ || exit 1; \
	done
	@for t in $(FUZZ_TARGETS); do echo "fuzz-corpus: $$t: $$(ls $(FUZZ_BUILD)/seeds/$$t | wc -l) seeds"; done

# Each target on its seeds and the inputs earlier runs kept (corpus/), for
# FUZZ_SECONDS; FUZZ_FLAGS passes more libFuzzer options.
fuzz-smoke: fuzz
	@mkdir -p $(FUZZ_BUILD)/artifacts
	@for t in $(FUZZ_TARGETS); do \
	    mkdir -p $(FUZZ_BUILD)/corpus/$$t; \
	    echo "fuzz-smoke: fuzz_$$t for $(FUZZ_SECONDS) s"; \
	    $(FUZZ_BUILD)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_TIMEOUT) \
	        -rss_limit_mb=2048 -max_len=65536 -dict=test/fuzz/$$t.dict -print_final_stats=1 \
	        -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t- $(FUZZ_FLAGS) \
	        $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/seeds/$$t \
	        > $(FUZZ_BUILD)/fuzz_$$t.log 2>&1 \
	      || { tail -n 60 $(FUZZ_BUILD)/fuzz_$$t.log; echo "fuzz-smoke: fuzz_$$t failed (log $(FUZZ_BUILD)/fuzz_$$t.log)"; exit 1; }; \
	    grep -E '^stat::number_of_executed_units|^Done' $(FUZZ_BUILD)/fuzz_$$t.log | tr '\n' ' '; echo; \
	done

# The CPU build (CUDA=0) and the whole test suite under ASan and UBSan, in
# build/asan/ (gcc; any sanitizer report fails the test that hit it). All
# tests but memory/host_figure_is_what_the_cpu_world_allocates, which
# measures the heap through glibc's mallinfo2, which ASan's allocator does
# not keep.
ASAN_BUILD  ?= build/asan
ASAN_SAN    ?= -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
ASAN_FILTER ?= !(memory/host_figure_is_what_the_cpu_world_allocates)
.PHONY: asan
asan:
	$(MAKE) CUDA=0 BUILD=$(ASAN_BUILD) CFLAGS="-O1 -g $(ASAN_SAN)" all $(ASAN_BUILD)/test_firn
	OMP_WAIT_POLICY=passive FIRN_BIN=$(ASAN_BUILD)/firn ./$(ASAN_BUILD)/test_firn --jobs 1 \
	    --filter '$(ASAN_FILTER)'

# ---- install -----------------------------------------------------------------
# make install [PREFIX=/usr/local] [DESTDIR=]: firn.h into $(PREFIX)/include/firn/,
# libfirn.a and, in a CPU-only build, the shared libfirn.so into $(PREFIX)/lib,
# and firn.pc into $(PREFIX)/lib/pkgconfig, so that a program builds with
#     cc prog.c $(pkg-config --cflags --libs firn)
# Where the shared library is installed it carries its own dependencies, and
# firn.pc lists them as private (for pkg-config --static); a CUDA build
# installs the static library only (its libfirn.so, kernels included, is
# built for the Python package, not installed) and firn.pc then lists
# cJSON, libpng, OpenMP and the static CUDA runtime in Libs, so that the
# plain command links too. SHARED=0 installs the
# static library only in a CPU build as well. make uninstall removes them;
# make install-check installs into a temporary PREFIX, builds examples/embed.c
# and examples/tool_press.c with pkg-config alone, against the shared and
# the static library, and runs embed.
PREFIX       ?= /usr/local
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
# firn.h includes only the C library's headers.
INSTALL_HEADERS = include/firn.h
FIRN_VERSION_NUM := $(shell sed -n 's/^\#define FIRN_VERSION *"\([0-9.]*\)".*/\1/p' include/firn.h)
# Before 1.0 a minor version may change the ABI: the soname keeps it.
FIRN_SONAME   = libfirn.so.$(word 1,$(subst ., ,$(FIRN_VERSION_NUM))).$(word 2,$(subst ., ,$(FIRN_VERSION_NUM)))
FIRN_SOFILE   = libfirn.so.$(FIRN_VERSION_NUM)
ifeq ($(CU_OBJ),)
SHARED ?= 1
else
override SHARED := 0
endif
# What a program that links firn needs besides it: the packages of PKGS
# (by name where pkg-config knows them), OpenMP, libm, and with CUDA the
# static CUDA runtime and what it needs.
PC_REQUIRES := $(shell pkg-config --exists $(PKGS) 2>/dev/null && echo $(PKGS))
PC_LIBS      = $(if $(PC_REQUIRES),,-lcjson -lpng) -lm -fopenmp \
               $(if $(NVCC),-L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/targets/x86_64-linux/lib \
               -lcudart_static -ldl -lrt -lpthread -lstdc++)
PIC_OBJ = $(patsubst $(BUILD)/%,$(BUILD)/pic/%,$(filter-out $(CLI_OBJ),$(HOST_OBJ)))

# The shared library's objects: the library's host code, position-independent.
$(BUILD)/pic/%.o: %.c $(wildcard include/*.h host/*.h)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC -c -o $@ $<
$(BUILD)/pic/host/svd_batch.o: override CFLAGS += -Wno-psabi

# -z defs: every symbol it uses is resolved by the libraries it names. A
# CUDA build's holds the kernels too (with the static CUDA runtime).
$(BUILD)/libfirn.so: $(PIC_OBJ) $(CU_OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,$(FIRN_SONAME) -Wl,-z,defs -o $@ $^ $(LDLIBS)

.PHONY: install uninstall install-check
install: $(BUILD)/libfirn.a $(if $(filter 1,$(SHARED)),$(BUILD)/libfirn.so)
	install -d $(DESTDIR)$(INCLUDEDIR)/firn $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR)
	install -m 644 $(INSTALL_HEADERS) $(DESTDIR)$(INCLUDEDIR)/firn/
	install -m 644 $(BUILD)/libfirn.a $(DESTDIR)$(LIBDIR)/libfirn.a
	rm -f $(DESTDIR)$(LIBDIR)/libfirn.so
ifeq ($(SHARED),1)
	install -m 755 $(BUILD)/libfirn.so $(DESTDIR)$(LIBDIR)/$(FIRN_SOFILE)
	ln -sf $(FIRN_SOFILE) $(DESTDIR)$(LIBDIR)/$(FIRN_SONAME)
	ln -sf $(FIRN_SONAME) $(DESTDIR)$(LIBDIR)/libfirn.so
endif
	{ echo 'prefix=$(PREFIX)'; echo 'libdir=$(LIBDIR)'; echo 'includedir=$(INCLUDEDIR)'; echo; \
	  echo 'Name: firn'; \
	  echo 'Description: continuum physics engine: MPM, SPH, PBD and FEM, CPU and CUDA'; \
	  echo 'Version: $(FIRN_VERSION_NUM)'; \
	  echo 'Cflags: -I$${includedir}/firn'; \
	  if [ "$(SHARED)" = 1 ]; then \
	    echo 'Libs: -L$${libdir} -lfirn'; \
	    echo 'Libs.private: $(strip $(PC_LIBS))'; \
	    echo 'Requires.private: $(PC_REQUIRES)'; \
	  else \
	    echo 'Libs: -L$${libdir} -lfirn $(strip $(PC_LIBS))'; \
	    echo 'Requires: $(PC_REQUIRES)'; \
	  fi; } > $(DESTDIR)$(PKGCONFIGDIR)/firn.pc
	@echo "firn: installed into $(DESTDIR)$(PREFIX) ($(if $(filter 1,$(SHARED)),static and shared,static) library)"

uninstall:
	rm -f $(DESTDIR)$(INCLUDEDIR)/firn/firn.h $(DESTDIR)$(PKGCONFIGDIR)/firn.pc \
	      $(DESTDIR)$(LIBDIR)/libfirn.a $(DESTDIR)$(LIBDIR)/libfirn.so \
	      $(DESTDIR)$(LIBDIR)/$(FIRN_SONAME) $(DESTDIR)$(LIBDIR)/$(FIRN_SOFILE)
	-rmdir $(DESTDIR)$(INCLUDEDIR)/firn

# Two installs (as built, then the static library alone), each built against
# with pkg-config only: embed runs two frames of scenes/fem_jelly_drop.json;
# the shared build must load libfirn.so from the PREFIX.
install-check: $(BUILD)/libfirn.a $(if $(filter 1,$(SHARED)),$(BUILD)/libfirn.so)
	@set -e; tmp=$$(mktemp -d /tmp/firn_install_XXXXXX); trap 'rm -rf "$$tmp"' EXIT; \
	for kind in $(if $(filter 1,$(SHARED)),shared) static; do \
	    p=$$tmp/$$kind; \
	    $(MAKE) --no-print-directory install PREFIX=$$p $(if $(filter 1,$(SHARED)),SHARED=$$([ $$kind = shared ] && echo 1 || echo 0)) >/dev/null; \
	    export PKG_CONFIG_PATH=$$p/lib/pkgconfig; \
	    for flags in "" --static; do \
	        $(CC) -std=gnu11 -O2 -o $$p/embed examples/embed.c $$(pkg-config $$flags --cflags --libs firn); \
	        $(CC) -std=gnu11 -O2 -o $$p/tool_press examples/tool_press.c $$(pkg-config $$flags --cflags --libs firn); \
	        if [ $$kind = shared ]; then \
	            LD_LIBRARY_PATH=$$p/lib ldd $$p/embed | grep -q "libfirn.so.* => $$p/lib/" || \
	              { echo "install-check: embed does not load $$p/lib/libfirn.so"; exit 1; }; \
	        else \
	            ! readelf -d $$p/embed | grep -q libfirn || { echo "install-check: embed needs a libfirn.so"; exit 1; }; \
	        fi; \
	        LD_LIBRARY_PATH=$$p/lib OMP_WAIT_POLICY=passive $$p/embed scenes/fem_jelly_drop.json 2 > $$p/out.txt; \
	        grep -q '^frame 2: t = ' $$p/out.txt || { cat $$p/out.txt; echo "install-check: embed ran no frame 2"; exit 1; }; \
	        echo "install-check: $$kind library, pkg-config $${flags:-(plain)}: built embed and tool_press, embed ran 2 frames"; \
	    done; \
	done
