# tessel entry points. `make demo`, `make test`, `make bench [BENCH=prefix]`, `make clean`.
# Each target installs missing system packages first (scripts/install-deps), then configures
# and builds with CMake + Ninja in $(BUILD_DIR).
#
# Variables (also read from the environment):
#   BUILD_DIR  build directory (default: build)
#   BUILD_TYPE CMake build type (default: Release)
#   JOBS       parallel build and test jobs (default: 2)
#   WERROR=1   treat compiler warnings as errors (-DTESSEL_WERROR=ON); CI sets it
#   TEST_TIMEOUT  seconds after which CTest stops a hung test (default: 300)
#   BENCH      run only the benchmarks whose names start with this prefix
#   CMAKE_ARGS extra arguments for the CMake configure step

BUILD_DIR  ?= build
BUILD_TYPE ?= Release
JOBS       ?= 2
WERROR     ?= 0
BENCH      ?=
CMAKE_ARGS ?=
TEST_TIMEOUT ?= 300

# The demo on the embedded default (one process): interior size, model days, dtype, outputs
# (height field .npy, final picture .png, animation of the run .gif).
DEMO_NX    ?= 360
DEMO_NY    ?= 180
DEMO_DAYS  ?= 10
DEMO_DTYPE ?= float32
DEMO_OUT   ?= out

ifeq ($(filter 1 ON on yes true,$(WERROR)),)
  TESSEL_WERROR := OFF
else
  TESSEL_WERROR := ON
endif

.PHONY: all demo test bench clean deps configure

all: test

deps:
	scripts/install-deps

# Re-running CMake on an existing tree is cheap and picks up WERROR/BUILD_TYPE changes.
configure: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DTESSEL_WERROR=$(TESSEL_WERROR) $(CMAKE_ARGS)

demo: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target shallow_water
	mkdir -p $(DEMO_OUT)
	$(BUILD_DIR)/examples/shallow_water/shallow_water --nx $(DEMO_NX) --ny $(DEMO_NY) --days $(DEMO_DAYS) --dtype $(DEMO_DTYPE) \
	  --out $(DEMO_OUT)/shallow_water.npy --png $(DEMO_OUT)/shallow_water.png --gif $(DEMO_OUT)/shallow_water.gif

# The Python package (python/) is built in the same tree against the library built here, with
# nanobind from the venv $(BUILD_DIR)/pyenv (scripts/python-env makes it; without PyPI the
# python_tests entry reports a skip).
test: configure
	scripts/check-layers
	scripts/python-env $(BUILD_DIR)/pyenv $(BUILD_DIR)/python-env.cmake
	cmake -C $(BUILD_DIR)/python-env.cmake -S . -B $(BUILD_DIR)
	cmake --build $(BUILD_DIR) -j $(JOBS)
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout $(TEST_TIMEOUT)

bench: configure
	scripts/run-bench $(BUILD_DIR) $(BENCH)

clean:
	rm -rf $(BUILD_DIR) $(DEMO_OUT)
