# ARKCoS bench. `make` builds build/arkcos; `make test` runs everything that
# runs on a CPU-only machine; see README.md for the other targets.

CC      ?= cc
NVCC    ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
GPU     ?= $(if $(NVCC),1,0)
ARCHFLAGS ?= -march=native
OPTFLAGS ?= -O3
CFLAGS  ?= $(OPTFLAGS) $(ARCHFLAGS)
CFLAGS  += -std=c11 -Wall -Wextra -fopenmp -I. -D_GNU_SOURCE
LDLIBS  += -lfftw3 -lfftw3f -lpthread -lsharp -lcfitsio -ljansson -lm -fopenmp
CXXFLAGS ?= $(OPTFLAGS) $(ARCHFLAGS)
CXXFLAGS += -std=c++17 -Wall -Wextra -fopenmp -I. -D_GNU_SOURCE
# instrumentation for every object and link (make sanitize sets it)
SANFLAGS ?=
CFLAGS   += $(SANFLAGS)
CXXFLAGS += $(SANFLAGS)
LDLIBS   += $(SANFLAGS)
PROFILE ?= default
PYTHON  ?= /usr/bin/python3

BUILD   ?= build
ENGINE_SRC := $(wildcard arkcos/*.c)
REF_SRC    := $(wildcard reference/*.c)
HARN_SRC   := $(filter-out harness/main.c,$(wildcard harness/*.c))
TEST_SRC   := $(wildcard tests/test_*.c)
TESTXX_SRC := $(wildcard tests/test_*.cpp)

ifeq ($(GPU),1)
  CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
  # sm_90 (Hopper) is the target; the others keep older cards building.
  # CUDA 13 dropped Volta (sm_70): its oldest target is Turing (sm_75).
  NVCC_MAJOR := $(shell $(NVCC) --version 2>/dev/null | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
  OLDEST_SM := $(if $(filter 1 2 3 4 5 6 7 8 9 10 11 12,$(NVCC_MAJOR)),70,75)
  NVCCFLAGS ?= -O3 -std=c++14 -gencode arch=compute_$(OLDEST_SM),code=sm_$(OLDEST_SM) \
               -gencode arch=compute_80,code=sm_80 \
               -gencode arch=compute_90,code=sm_90 \
               -gencode arch=compute_90,code=compute_90
  GPU_OBJ  := $(BUILD)/obj/arkcos/gpu.o
  CFLAGS   += -DARKCOS_WITH_CUDA
  LDLIBS   += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcufft -lcudart
  ENGINE_SRC := $(filter-out arkcos/gpu_none.c,$(ENGINE_SRC))
else
  GPU_OBJ  :=
endif

# recorded in results' meta.cflags
ARKCOS_CFLAGS_STR := $(CFLAGS)
$(BUILD)/obj/harness/meta.o: CFLAGS += -DARKCOS_CFLAGS='"$(ARKCOS_CFLAGS_STR)"'

ENGINE_OBJ := $(ENGINE_SRC:%.c=$(BUILD)/obj/%.o) $(GPU_OBJ)
REF_OBJ    := $(REF_SRC:%.c=$(BUILD)/obj/%.o)
HARN_OBJ   := $(HARN_SRC:%.c=$(BUILD)/obj/%.o)
TESTXX_BIN := $(TESTXX_SRC:tests/%.cpp=$(BUILD)/tests/%)
TEST_BIN   := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%) $(TESTXX_BIN)
LIBS       := $(BUILD)/libarkcos.a $(BUILD)/libarkref.a $(BUILD)/libarkharness.a

.PHONY: all test bench reproduce perfcheck perfcheck-update gpucheck install-deps clean deps-check

TOOL_BIN := $(BUILD)/tools/gpu_check $(BUILD)/tools/bench $(BUILD)/tools/kernel_profile $(BUILD)/tools/narrow_beams
# helper programs of the Python tests (built by the tests' rule below; not
# named test_*, so tests/run.sh does not run them)
TESTTOOL_BIN := $(BUILD)/tests/spin2_direct_tool

all: $(BUILD)/arkcos $(TEST_BIN) $(TOOL_BIN) $(TESTTOOL_BIN)

$(BUILD)/obj/%.o: %.c $(wildcard arkcos/*.h reference/*.h harness/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/arkcos/gpu.o: arkcos/gpu.cu $(wildcard arkcos/*.h)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -I. -DARKCOS_WITH_CUDA -Xcompiler -fPIC,-Wall -c $< -o $@

$(BUILD)/libarkcos.a: $(ENGINE_OBJ)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/libarkref.a: $(REF_OBJ)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/libarkharness.a: $(HARN_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/arkcos: $(BUILD)/obj/harness/main.o $(LIBS)
	$(CC) -o $@ $< $(BUILD)/libarkharness.a $(BUILD)/libarkref.a $(BUILD)/libarkcos.a $(LDLIBS) -lstdc++

$(BUILD)/tests/%: tests/%.c tests/testlib.h tests/testmaps.h $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libarkharness.a $(BUILD)/libarkref.a $(BUILD)/libarkcos.a $(LDLIBS) -lchealpix -lstdc++

# C++ tests: the GPU backend's kernels and planning run on the host against
# the CPU backend (g++ and FFTW only: built and run with GPU=0 too)
$(TESTXX_BIN): $(BUILD)/tests/%: tests/%.cpp tests/testlib.h tests/testkernels.h $(wildcard arkcos/*.h) $(BUILD)/libarkcos.a
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -o $@ $< $(BUILD)/libarkcos.a $(LDLIBS)

# Programs that are not tests (tools/): bench (make bench), kernel_profile
# (Fig. 3 of make reproduce) and gpu_check (make gpucheck: the GPU against the
# CPU and the direct sum; it needs a device, so it is not part of make test and
# borrows the tests' check macros and random maps)
$(TOOL_BIN): $(BUILD)/tools/%: tools/%.c tests/testlib.h tests/testmaps.h tests/testkernels.h $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libarkharness.a $(BUILD)/libarkref.a $(BUILD)/libarkcos.a $(LDLIBS) -lstdc++

install-deps:
	bash scripts/install-deps.sh

deps-check:
	@bash scripts/install-deps.sh --if-missing

test: deps-check
	$(MAKE) all
	BUILD=$(BUILD) PYTHON=$(PYTHON) bash tests/run.sh

bench: deps-check
	$(MAKE) all
	bash scripts/bench.sh

reproduce: deps-check
	$(MAKE) all
	bash scripts/reproduce.sh $(PROFILE)

perfcheck: deps-check
	$(MAKE) all
	bash scripts/perfcheck.sh

perfcheck-update: deps-check
	$(MAKE) all
	bash scripts/perfcheck.sh --update

gpucheck: deps-check
	$(MAKE) all
	bash scripts/gpucheck.sh

clean:
	rm -rf $(BUILD) plots/out

$(BUILD)/tests/test_fuzz_regress: tests/fuzz/fuzz_entries.h

# Reliability: sanitizers, valgrind and fuzzing, each in its own build
# folder with a portable -march (valgrind cannot run every -march=native
# instruction). GPU=0: the CUDA libraries do not run under AddressSanitizer
# or valgrind.
.PHONY: sanitize valgrind fuzz fuzz-targets
PORTABLE_ARCH ?= -march=x86-64
SAN_BUILD  ?= build-san
VG_BUILD   ?= build-vg
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := config fits kernel beam results
SAN_FLAGS  := -fsanitize=address,undefined -fno-omit-frame-pointer

sanitize: deps-check
	$(MAKE) BUILD=$(SAN_BUILD) GPU=0 ARCHFLAGS="$(PORTABLE_ARCH)" OPTFLAGS="-O1 -g" \
	  SANFLAGS="$(SAN_FLAGS)" all
	BUILD=$(SAN_BUILD) PYTHON=$(PYTHON) bash scripts/sanitize.sh

valgrind: deps-check
	$(MAKE) BUILD=$(VG_BUILD) GPU=0 ARCHFLAGS="$(PORTABLE_ARCH)" OPTFLAGS="-O1 -g" $(VG_BUILD)/arkcos
	BUILD=$(VG_BUILD) bash scripts/valgrind.sh

fuzz: deps-check
	$(MAKE) BUILD=$(FUZZ_BUILD) GPU=0 CC=clang ARCHFLAGS="$(PORTABLE_ARCH)" OPTFLAGS="-O1 -g" \
	  SANFLAGS="$(SAN_FLAGS) -fsanitize=fuzzer-no-link" fuzz-targets
	FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/fuzz.sh $(FUZZ_TARGETS)

fuzz-targets: $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)
$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_entries.h $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(BUILD)/libarkharness.a $(BUILD)/libarkref.a $(BUILD)/libarkcos.a $(LDLIBS) -lstdc++
