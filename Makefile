# Thin wrapper so the workbook is driven from the root without knowing CMake:
#   make lesson3   build lesson 3's exercise, reference and the grader
#   make test      build everything and run the test suite (GPU tests skip without a GPU)
#   make bench     time every reference solution (needs a GPU)
#   make docs      build the Doxygen site into build/docs/html
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release

# Every lesson folder is a target (lessons/03-block-reduce -> lesson3), so a new lesson needs no edit here.
LESSON_TARGETS := $(shell ls -d lessons/[0-9][0-9]-* 2>/dev/null | sed -E 's#lessons/0?([0-9]+)-.*#lesson\1#')

.PHONY: all configure test bench docs clean $(LESSON_TARGETS)

all: configure
	cmake --build $(BUILD) -j $(JOBS)

configure:
	@test -f $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

lesson%: configure
	cmake --build $(BUILD) -j $(JOBS) --target $@

test: all
	ctest --test-dir $(BUILD) --output-on-failure

bench: all
	cmake --build $(BUILD) --target bench

docs: configure
	cmake --build $(BUILD) --target docs

clean:
	@test ! -f $(BUILD)/CMakeCache.txt || cmake --build $(BUILD) --target clean
