# firn - build the library, the command-line tool and the tests.
#
#   make demo       install missing Debian packages, build, run scenes/sand_column.json
#                   into out/sand_column/
#   make            build/firn and build/libfirn.a (CUDA parts when nvcc is found)
#   make test       install missing packages, build, run the Criterion test suite
#   make deps       only install (or name) the missing Debian packages
#   make CUDA=0     force a CPU-only build
#   make CUDA_ARCH="-gencode arch=compute_90,code=sm_90"   override GPU targets
#   make DEBUG_SYNC=1   synchronize and check after every kernel launch
#   make emu        the CUDA code on the emulated runtime (test/emu/), under ASan and
#                   UBSan, in build/emu/ (docs/EMULATION.md); make emu-check runs its
#                   GPU tests, firn compare on every scene and a small bench
#   make gpu-rehearsal  bench/gpu_check.sh's two device calls rehearsed on the
#                   emulated runtime, and the size of bench/pack_gpu.sh's bundle

CC      ?= gcc
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
endif

HOST_SRC = $(wildcard host/*.c)
HOST_OBJ = $(HOST_SRC:%.c=$(BUILD)/%.o)
TEST_SRC = $(wildcard test/*.c)
TEST_OBJ = $(TEST_SRC:%.c=$(BUILD)/%.o)

ifneq ($(NVCC),)
CUDA_HOME  ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_ARCH  ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
              -gencode arch=compute_90,code=compute_90
NVCCFLAGS  ?= -O3 -lineinfo
override NVCCFLAGS += -std=c++17 $(CUDA_ARCH) -Iinclude -Ihost -Xcompiler -Wall,-Wextra \
              -DFIRN_WITH_CUDA
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
TEST_DEB_PKGS = $(DEB_PKGS) $(if $(HAVE_MATPLOTLIB),,python3-matplotlib)

.PHONY: all test test-run clean info deps demo emu emu-check emu-mutate tet-assets
all: info $(BUILD)/firn $(BUILD)/reorder_probe $(BUILD)/tool_press $(BUILD)/make_tet_assets

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
	$(CXX) $(EMU_CXXFLAGS) -include cuda_runtime.h -c -o $@ $<

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

# Counts firn_svd3's Jacobi sweeps (docs/BENCH.md, "The SVD's sweeps").
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

# The GPU check's device window rehearsed on the emulated runtime (CI): the
# bundle's size, both calls of bench/gpu_check.sh scaled down, $OUT within the
# device tool's limits, the plan within each call's budget (bench/rehearsal.sh).
.PHONY: gpu-rehearsal
gpu-rehearsal: emu
	bash bench/rehearsal.sh

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

# Plants physics mutations in a copy of the tree, one at a time (test/mutations.txt).
.PHONY: mutate
mutate:
	bash test/mutate.sh

# The style of .clang-format over every C, CUDA and C++ source: `make format`
# rewrites them, `make format-check` (CI) lists the files that differ.
FORMAT_SOURCES = $(shell git ls-files '*.c' '*.h' '*.cu' '*.cuh' '*.cpp' 2>/dev/null)
.PHONY: format format-check
format:
	clang-format -i $(FORMAT_SOURCES)

format-check:
	@bad=0; for f in $(FORMAT_SOURCES); do \
	    clang-format --dry-run -Werror "$$f" >/dev/null 2>&1 || { echo "format-check: $$f differs from .clang-format (run make format)"; bad=1; }; \
	done; \
	[ $$bad = 0 ] && echo "format-check: $(words $(FORMAT_SOURCES)) files follow .clang-format"; exit $$bad
