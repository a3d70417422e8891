# ARKCoS bench. `make` builds build/arkcos; `make test` runs everything that
# runs on a CPU-only machine; see README.md for the other targets.

CC      ?= cc
NVCC    ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
GPU     ?= $(if $(NVCC),1,0)
ARCHFLAGS ?= -march=native
OPTFLAGS ?= -O3
CFLAGS  ?= $(OPTFLAGS) $(ARCHFLAGS)
CFLAGS  += -std=c11 -Wall -Wextra -fopenmp -I. -D_GNU_SOURCE
LDLIBS  += -lfftw3 -lfftw3f -lpthread -lsharp -lcfitsio -ljansson -lm -ldl -fopenmp
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
ENGINE_SRC := $(filter-out arkcos/arkcos_mpi.c arkcos/isa_dispatch.c,$(wildcard arkcos/*.c))
REF_SRC    := $(wildcard reference/*.c)
HARN_SRC   := $(filter-out harness/main.c,$(wildcard harness/*.c harness/*/*.c))
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
  # The CUDA backend is a module loaded when first asked for
  # (arkcos/gpu_module.h): the programs and libarkcos.so do not link the
  # CUDA libraries, so CPU-only runs neither need nor map them.
  GPU_OBJ  := $(BUILD)/obj/arkcos/gpu.o
  GPU_MOD  := $(BUILD)/libarkcos_gpu.so.1
  CFLAGS   += -DARKCOS_WITH_CUDA

  ENGINE_SRC := $(filter-out arkcos/gpu_none.c,$(ENGINE_SRC))
else
  GPU_OBJ  :=
  GPU_MOD  :=
  ENGINE_SRC := $(filter-out arkcos/gpu_loader.c,$(ENGINE_SRC))
endif

# recorded in results' meta.cflags
ARKCOS_CFLAGS_STR := $(CFLAGS)
$(BUILD)/obj/harness/common/meta.o: CFLAGS += -DARKCOS_CFLAGS='"$(ARKCOS_CFLAGS_STR)"'

ENGINE_OBJ := $(ENGINE_SRC:%.c=$(BUILD)/obj/%.o)
REF_OBJ    := $(REF_SRC:%.c=$(BUILD)/obj/%.o)
HARN_OBJ   := $(HARN_SRC:%.c=$(BUILD)/obj/%.o)
TESTXX_BIN := $(TESTXX_SRC:tests/%.cpp=$(BUILD)/tests/%)
TEST_BIN   := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%) $(TESTXX_BIN)
LIBS       := $(BUILD)/libarkcos.a $(BUILD)/libarkref.a $(BUILD)/libarkharness.a

.PHONY: all test test-hostile bench reproduce perfcheck perfcheck-update gpucheck install-deps clean deps-check \
        lib install uninstall

TOOL_BIN := $(BUILD)/tools/gpu_check $(BUILD)/tools/bench $(BUILD)/tools/kernel_profile $(BUILD)/tools/narrow_beams
# helper programs of the Python tests (built by the tests' rule below; not
# named test_*, so tests/run.sh does not run them)
TESTTOOL_BIN := $(BUILD)/tests/spin2_direct_tool $(BUILD)/tests/smoother_api

all: $(BUILD)/arkcos $(TEST_BIN) $(TOOL_BIN) $(TESTTOOL_BIN) $(GPU_MOD)

# The commit this build is made from (arkcos_build_commit() in arkcos.h):
# scripts/build-info.sh writes it at every make, and the header is replaced
# only when the commit or the tree's dirty state changed, so that only
# build_info.o (and what links it) is made again. Nothing asks git at run
# time; a tree without .git records "unknown".
BUILD_INFO_H := $(BUILD)/gen/arkcos_build_info.h
$(BUILD_INFO_H): FORCE
	@mkdir -p $(dir $@)
	@sh scripts/build-info.sh > $@.tmp && \
	  if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
$(BUILD)/obj/arkcos/build_info.o $(BUILD)/pic/obj/arkcos/build_info.o: $(BUILD_INFO_H)
$(BUILD)/obj/arkcos/build_info.o $(BUILD)/pic/obj/arkcos/build_info.o: CFLAGS += -I$(BUILD)/gen

$(BUILD)/obj/%.o: %.c $(wildcard arkcos/*.h reference/*.h harness/*.h harness/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/arkcos/gpu.o: arkcos/gpu.cu $(wildcard arkcos/*.h)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -I. -DARKCOS_WITH_CUDA -DARKCOS_GPU_MODULE -Xcompiler -fPIC,-Wall -c $< -o $@

# the module exports arkcos_gpu_module_init alone; --no-undefined: what it
# needs of the engine comes through the loader's table, nothing else
$(GPU_MOD): $(GPU_OBJ) arkcos/gpu_module.map
	$(CXX) -shared -o $@ $(GPU_OBJ) -Wl,-soname,libarkcos_gpu.so.1 \
	  -Wl,--version-script,arkcos/gpu_module.map -Wl,--no-undefined \
	  -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcufft -lcudart -fopenmp -lm

$(BUILD)/libarkcos.a: $(ENGINE_OBJ)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/libarkref.a: $(REF_OBJ)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/libarkharness.a: $(HARN_OBJ)
	rm -f $@ && ar rcs $@ $^

# MPI (docs/MPI.md): `make MPI=1` links $(BUILD)/arkcos with OpenMPI's mpicc,
# MPI-aware; `make mpi` builds that binary as $(BUILD)/arkcos-mpi, plus the
# MPI API check, whatever MPI is. Only the objects that differ with MPI are
# compiled again (into obj-mpi/); the libraries are the plain build's.
MPI     ?= 0
MPICC   ?= mpicc
MPI_OBJ := $(BUILD)/obj-mpi/harness/main.o $(BUILD)/obj-mpi/harness/common/hmpi.o \
           $(BUILD)/obj-mpi/arkcos/arkcos_mpi.o
ifeq ($(MPI),1)
  ARKCOS_MAIN := $(MPI_OBJ)
  ARKCOS_LD   := $(MPICC)
else
  ARKCOS_MAIN := $(BUILD)/obj/harness/main.o
  ARKCOS_LD   := $(CC)
endif

$(BUILD)/obj-mpi/%.o: %.c $(wildcard arkcos/*.h reference/*.h harness/*.h harness/*/*.h)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -DARKCOS_WITH_MPI -c $< -o $@

# relinks build/arkcos when MPI changes between two makes
$(BUILD)/mpi-setting: FORCE
	@mkdir -p $(BUILD)
	@echo "$(MPI)" | cmp -s - $@ || echo "$(MPI)" > $@
FORCE:

$(BUILD)/arkcos: $(ARKCOS_MAIN) $(LIBS) $(BUILD)/mpi-setting
	$(ARKCOS_LD) -o $@ $(ARKCOS_MAIN) $(BUILD)/libarkharness.a $(BUILD)/libarkref.a $(BUILD)/libarkcos.a $(LDLIBS) -lstdc++

$(BUILD)/arkcos-mpi: $(MPI_OBJ) $(LIBS)
	$(MPICC) -o $@ $(MPI_OBJ) $(BUILD)/libarkharness.a $(BUILD)/libarkref.a $(BUILD)/libarkcos.a $(LDLIBS) -lstdc++

$(BUILD)/tests/mpi_plan_check: tests/mpi_plan_check.c tests/testlib.h tests/testmaps.h $(BUILD)/obj-mpi/arkcos/arkcos_mpi.o $(LIBS)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -DARKCOS_WITH_MPI -o $@ $< $(BUILD)/obj-mpi/arkcos/arkcos_mpi.o $(BUILD)/libarkharness.a $(BUILD)/libarkref.a $(BUILD)/libarkcos.a $(LDLIBS) -lchealpix -lstdc++

.PHONY: mpi FORCE
mpi: $(BUILD)/arkcos-mpi $(BUILD)/tests/mpi_plan_check

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

# The slow promises of README "Guarantees": kill and resume ten times, a full
# disk, impossible sizes under ulimit -v, compare's false-alarm and detection
# rates with its defaults (6 to 12 minutes on 2 cores)
test-hostile: deps-check
	$(MAKE) all
	BUILD=$(BUILD) PYTHON=$(PYTHON) bash tests/hostile/run.sh

gpucheck: deps-check
	$(MAKE) all
	bash scripts/gpucheck.sh

clean:
	rm -rf $(BUILD) plots/out

# ------------------------------------------------- shared library, install
# build/libarkcos.so.1.0.0 (soname libarkcos.so.1) from a -fPIC copy of the
# engine's objects in build/pic/, so the static objects that the tests link
# stay as they are (the CUDA backend is its own module, libarkcos_gpu.so.1,
# loaded when first asked for and installed beside it). Only the
# functions declared in arkcos/arkcos.h are exported: the version script is
# made from the preprocessed header, so a new public function is exported
# without a second list to keep in step.
SOVERSION  := 1
SOVERSION_FULL := 1.0.0
SHLIB      := $(BUILD)/libarkcos.so.$(SOVERSION_FULL)
SHLIB_LINKS := $(BUILD)/libarkcos.so.$(SOVERSION) $(BUILD)/libarkcos.so
PIC_OBJ    := $(ENGINE_SRC:%.c=$(BUILD)/pic/obj/%.o)
# what the shared library needs besides itself: also Libs.private in arkcos.pc
# (-ldl: libsharp and the GPU module are opened at run time)
SHLIB_LIBS := -lfftw3 -lfftw3f -lpthread -lm -fopenmp -ldl

$(BUILD)/pic/obj/%.o: %.c $(wildcard arkcos/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -c $< -o $@

$(BUILD)/libarkcos.map: arkcos/arkcos.h
	@mkdir -p $(dir $@)
	{ echo '{'; echo '  global:'; \
	  $(CC) -E -P $< | grep -oE '\barkcos_[a-z0-9_]+[[:space:]]*\(' | tr -d '( \t' | \
	    sort -u | sed 's/.*/    &;/'; \
	  echo '  local: *;'; echo '};'; } > $@.tmp && mv $@.tmp $@

$(SHLIB): $(PIC_OBJ) $(BUILD)/libarkcos.map
	$(CC) $(SANFLAGS) -shared -o $@ $(PIC_OBJ) -Wl,-soname,libarkcos.so.$(SOVERSION) \
	  -Wl,--version-script,$(BUILD)/libarkcos.map -Wl,--no-undefined $(SHLIB_LIBS)

$(SHLIB_LINKS) &: $(SHLIB)
	ln -sf libarkcos.so.$(SOVERSION_FULL) $(BUILD)/libarkcos.so.$(SOVERSION)
	ln -sf libarkcos.so.$(SOVERSION) $(BUILD)/libarkcos.so

lib: $(SHLIB_LINKS)
all: lib

PREFIX  ?= /usr/local
DESTDIR ?=
bindir  := $(PREFIX)/bin
libdir  := $(PREFIX)/lib
includedir := $(PREFIX)/include
mandir  := $(PREFIX)/share/man
ARKCOS_VERSION_STR := $(shell sed -n 's/^\#define ARKCOS_VERSION "\(.*\)"/\1/p' arkcos/arkcos.h)
INSTALLED := $(bindir)/arkcos $(libdir)/libarkcos.so.$(SOVERSION_FULL) \
             $(libdir)/libarkcos.so.$(SOVERSION) $(libdir)/libarkcos.so \
             $(includedir)/arkcos.h $(libdir)/pkgconfig/arkcos.pc $(mandir)/man1/arkcos.1 \
             $(if $(GPU_MOD),$(libdir)/libarkcos_gpu.so.1)

$(BUILD)/arkcos.pc: Makefile arkcos/arkcos.h
	@mkdir -p $(dir $@)
	{ echo 'prefix=$(PREFIX)'; echo 'libdir=$${prefix}/lib'; \
	  echo 'includedir=$${prefix}/include'; echo; \
	  echo 'Name: arkcos'; \
	  echo 'Description: ARKCoS radial-kernel convolution of HEALPix maps (CPU$(if $(GPU_OBJ), and CUDA))'; \
	  echo 'Version: $(ARKCOS_VERSION_STR)'; \
	  echo 'Requires.private: fftw3 fftw3f'; \
	  echo 'Cflags: -I$${includedir}'; \
	  echo 'Libs: -L$${libdir} -larkcos'; \
	  echo 'Libs.private: $(SHLIB_LIBS)'; } > $@.tmp && mv $@.tmp $@

# The .pc file records PREFIX: made again for each install.
install: $(BUILD)/arkcos $(SHLIB_LINKS) $(GPU_MOD)
	rm -f $(BUILD)/arkcos.pc && $(MAKE) --no-print-directory $(BUILD)/arkcos.pc PREFIX='$(PREFIX)'
	install -d '$(DESTDIR)$(bindir)' '$(DESTDIR)$(libdir)/pkgconfig' \
	  '$(DESTDIR)$(includedir)' '$(DESTDIR)$(mandir)/man1'
	install -m 755 $(BUILD)/arkcos '$(DESTDIR)$(bindir)/arkcos'
	install -m 755 $(SHLIB) '$(DESTDIR)$(libdir)/libarkcos.so.$(SOVERSION_FULL)'
	ln -sf libarkcos.so.$(SOVERSION_FULL) '$(DESTDIR)$(libdir)/libarkcos.so.$(SOVERSION)'
	ln -sf libarkcos.so.$(SOVERSION) '$(DESTDIR)$(libdir)/libarkcos.so'
	$(if $(GPU_MOD),install -m 755 $(GPU_MOD) '$(DESTDIR)$(libdir)/libarkcos_gpu.so.1')
	install -m 644 arkcos/arkcos.h '$(DESTDIR)$(includedir)/arkcos.h'
	install -m 644 $(BUILD)/arkcos.pc '$(DESTDIR)$(libdir)/pkgconfig/arkcos.pc'
	install -m 644 docs/arkcos.1 '$(DESTDIR)$(mandir)/man1/arkcos.1'
	@if [ -z '$(DESTDIR)' ] && [ '$(PREFIX)' = /usr/local ] && command -v ldconfig >/dev/null && [ -w /etc/ld.so.cache ]; then ldconfig; fi

# Removes exactly the files install put there (folders stay: they may
# have been there before).
uninstall:
	rm -f $(foreach f,$(INSTALLED),'$(DESTDIR)$(f)')

# ------------------------------------------ the portable library (Python)
# $(BUILD)/portable/libarkcos.so.1, what `pip install ./python` bundles: it
# runs on any x86-64 CPU, whatever ARCHFLAGS, and needs nothing of the system
# but the C library. The engine is compiled four times, for x86-64,
# x86-64-v2, -v3 (AVX2, FMA) and -v4 (AVX-512) with -mtune=generic, each
# copy's global symbols renamed NAME__v1 .. NAME__v4; arkcos/isa_dispatch.c
# makes each public function an indirect function that the loader binds to
# the highest copy the CPU runs. FFTW is linked in from its static archives
# (Debian's are position-independent; without them libfftw3.so.3 and
# libfftw3f.so.3 are copied beside it instead) and libgomp.so.1 is copied
# beside it, found through RUNPATH $ORIGIN. tests/test_wheel.sh checks it.
PORTABLE      := $(BUILD)/portable
PORTABLE_LIB  := $(PORTABLE)/libarkcos.so.1
PORTABLE_ISAS := v1 v2 v3 v4
ISA_MARCH_v1  := x86-64
ISA_MARCH_v2  := x86-64-v2
ISA_MARCH_v3  := x86-64-v3
ISA_MARCH_v4  := x86-64-v4
FFTW_A  := $(shell $(CC) -print-file-name=libfftw3.a)
FFTWF_A := $(shell $(CC) -print-file-name=libfftw3f.a)
ifneq ($(and $(wildcard $(FFTW_A)),$(wildcard $(FFTWF_A))),)
  PORTABLE_FFTW := $(FFTW_A) $(FFTWF_A)
  PORTABLE_COPIED := libgomp.so.1
else
  PORTABLE_FFTW := -lfftw3 -lfftw3f
  PORTABLE_COPIED := libgomp.so.1 libfftw3.so.3 libfftw3f.so.3
endif
PORTABLE_LIBS := $(PORTABLE_FFTW) -lpthread -lm -fopenmp -ldl

# the copies are compiled again when the flags (GPU among them) change
$(PORTABLE)/cflags: FORCE
	@mkdir -p $(dir $@)
	@echo '$(filter-out $(ARCHFLAGS),$(CFLAGS)) GPU=$(GPU)' | cmp -s - $@ || \
	  echo '$(filter-out $(ARCHFLAGS),$(CFLAGS)) GPU=$(GPU)' > $@

define portable_isa
$(PORTABLE)/obj-$(1)/%.o: ARCHFLAGS :=
$(PORTABLE)/obj-$(1)/%.o: %.c $(wildcard arkcos/*.h) $(PORTABLE)/cflags
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) -march=$(ISA_MARCH_$(1)) -mtune=generic -fPIC -c $$< -o $$@
$(PORTABLE)/obj-$(1)/arkcos/build_info.o: $(BUILD_INFO_H)
$(PORTABLE)/obj-$(1)/arkcos/build_info.o: CFLAGS += -I$(BUILD)/gen
# one object per copy; its global symbols (definitions and the references
# to them) renamed NAME__$(1)
$(PORTABLE)/engine-$(1).o: $(ENGINE_SRC:%.c=$(PORTABLE)/obj-$(1)/%.o)
	$$(LD) -r -o $$@.tmp-r $$^
	nm --defined-only -g $$@.tmp-r | awk 'NF == 3 { print $$$$3, $$$$3 "__$(1)" }' > $$@.syms
	objcopy --redefine-syms=$$@.syms $$@.tmp-r $$@ && rm -f $$@.tmp-r
endef
$(foreach isa,$(PORTABLE_ISAS),$(eval $(call portable_isa,$(isa))))

# one ISA_FN(name) per function of arkcos.h, as the version script
$(PORTABLE)/isa_names.h: $(BUILD)/libarkcos.map
	@mkdir -p $(dir $@)
	sed -n 's/^ *\(arkcos_[a-z0-9_]*\);$$/ISA_FN(\1)/p' $< > $@.tmp && mv $@.tmp $@
$(PORTABLE)/libarkcos.map: $(BUILD)/libarkcos.map
	@mkdir -p $(dir $@)
	sed 's/^  global:$$/&\n    arkcos_portable_isa;/' $< > $@.tmp && mv $@.tmp $@
$(PORTABLE)/isa_dispatch.o: arkcos/isa_dispatch.c $(PORTABLE)/isa_names.h
	$(CC) -O2 -std=c11 -Wall -Wextra -march=x86-64 -fPIC \
	  -DISA_NAMES='"$(abspath $(PORTABLE)/isa_names.h)"' -c $< -o $@

$(PORTABLE_LIB): $(PORTABLE_ISAS:%=$(PORTABLE)/engine-%.o) $(PORTABLE)/isa_dispatch.o \
                 $(PORTABLE)/libarkcos.map
	$(CC) -shared -o $@ $(PORTABLE_ISAS:%=$(PORTABLE)/engine-%.o) $(PORTABLE)/isa_dispatch.o \
	  -Wl,-soname,libarkcos.so.1 -Wl,--version-script,$(PORTABLE)/libarkcos.map \
	  -Wl,--no-undefined -Wl,-z,text -Wl,--enable-new-dtags -Wl,-rpath,'$$ORIGIN' $(PORTABLE_LIBS)

# the files the wheel carries (python/setup.py reads the list) and the
# newest glibc symbol version they ask for (the wheel's manylinux tag)
PORTABLE_FILES := libarkcos.so.1 $(PORTABLE_COPIED) $(if $(GPU_MOD),libarkcos_gpu.so.1)
$(PORTABLE)/bundle.txt: $(PORTABLE_LIB) $(GPU_MOD)
	for f in $(PORTABLE_COPIED); do \
	  src=$$($(CC) -print-file-name=$$f); [ -f "$$src" ] || src=$$(ldconfig -p | \
	    awk -v f=$$f '$$1 == f && /x86-64/ { print $$NF; exit }'); \
	  [ -f "$$src" ] || { echo "portable-lib: $$f not found" >&2; exit 1; }; \
	  cp -L "$$src" $(PORTABLE)/$$f || exit 1; \
	done
	$(if $(GPU_MOD),cp $(GPU_MOD) $(PORTABLE)/)
	objdump -T $(PORTABLE_FILES:%=$(PORTABLE)/%) | grep -o 'GLIBC_2\.[0-9]*' | sed 's/GLIBC_//' | \
	  sort -t. -k2,2n | tail -1 > $(PORTABLE)/glibc.txt
	printf '%s\n' $(PORTABLE_FILES) > $@.tmp && mv $@.tmp $@

.PHONY: portable-lib
portable-lib: $(PORTABLE)/bundle.txt

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
