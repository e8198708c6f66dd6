# Thin wrapper so the workbook is driven from the root without knowing CMake:
#   make lesson3   build lesson 3's exercise, reference and the grader (only what is stale)
#   make test      build everything and run the test suite (GPU tests skip without a GPU)
#   make bench     time every reference solution (needs a GPU)
#   make docs      build the Doxygen site into build/docs/html
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release
MAKEFLAGS += --no-print-directory

# Every lesson folder is a target (lessons/03-block-reduce -> lesson3), so a new lesson needs no edit here.
LESSON_TARGETS := $(shell ls -d lessons/[0-9][0-9]-* 2>/dev/null | sed -E 's#lessons/0?([0-9]+)-.*#lesson\1#')

# Without a GPU, ./grade grades lessons 2 and up on the CPU emulator: `make lessonN` builds its grader
# too (when this build has one), so the ./grade that follows has nothing left to build.
NO_GPU := $(shell nvidia-smi -L > /dev/null 2>&1 || echo yes)
emulator_target = $(if $(and $(NO_GPU),$(filter-out lesson1,$@),$(wildcard $(BUILD)/emulator_config.json)),wb-grader-emu)

.PHONY: all configure test bench docs clean $(LESSON_TARGETS)

all: configure
	cmake --build $(BUILD) -j $(JOBS)

configure:
	@test -f $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

# An explicit rule, not a pattern: GNU Make never applies a pattern rule to a .PHONY target, and
# without .PHONY a file or folder named like the target would make it look up to date.
# CMake rebuilds only what is stale and prints its [ NN%] progress lines as it goes.
$(LESSON_TARGETS): configure
	@echo "make $@: building $@'s exercise, its reference solution and the grader in $(BUILD)/ (only what is stale)"
	cmake --build $(BUILD) -j $(JOBS) --target $@ $(emulator_target)
	@echo "make $@: up to date. Grade it: ./grade $@"

# A lesson that does not exist says so (a pattern rule: only names no other rule claims reach it).
lesson%:
	@echo "make: there is no $@. The lessons are: $(LESSON_TARGETS)" >&2
	@exit 2

test: all
	ctest --test-dir $(BUILD) --output-on-failure

bench: all
	cmake --build $(BUILD) --target bench

docs: configure
	cmake --build $(BUILD) --target docs

clean:
	@test ! -f $(BUILD)/CMakeCache.txt || cmake --build $(BUILD) --target clean
