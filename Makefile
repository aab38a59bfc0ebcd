# fuselab: `make demo` runs the seed page live, `make test` runs the test suite.
# Both start from a fresh clone with only python3 (>= 3.11), a C compiler and make: they create
# .venv, install the dependencies, build fastplan's Cython extensions in place and, on Linux as
# root, install Mesa's Vulkan driver (lavapipe) so the GPU kernels run on the CPU.
# Stamp files in .venv/ make the second run skip what is already done.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HYPOTHESIS_PROFILE ?= ci
PYTEST_ARGS ?=
export HYPOTHESIS_PROFILE

# build tools needed by `pip install -e . --no-build-isolation`; everything else comes from
# pyproject.toml (numpy, and the `test` extra: pytest, hypothesis, wgpu, rich). The editable
# install builds no extension (FASTPLAN_NO_EXTENSIONS=1): `build` compiles them once, in place.
BUILD_REQUIREMENTS := "Cython>=3.1" "setuptools>=77" wheel

EXT_SOURCES := setup.py $(wildcard fastplan/*.pyx fastplan/*.pxd fastplan/*/*.pyx fastplan/*/*.pxd)

.PHONY: venv build vulkan test demo clean distclean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(BUILD_REQUIREMENTS)
	FASTPLAN_NO_EXTENSIONS=1 $(PY) -m pip install --quiet --no-build-isolation --editable ".[test]"
	touch $@

# A plain build by default. `make build FASTPLAN_PGO=1` builds profile-guided (setup.py,
# FASTPLAN_PGO): instrumented, trained by tools/pgo_train.py, built again; about twice a plain
# build's time for a planner about 9 % faster (docs/benchmarks.md, "Planner: plain or
# profile-guided build"). Every module is linked into one library, fastplan/_bundle*.so
# (setup.py's BUNDLE). setup.py rebuilds fully when FASTPLAN_CYTHON_DEBUG or FASTPLAN_PGO
# changed.
FASTPLAN_PGO ?= 0
build: $(VENV)/.installed
	FASTPLAN_PGO=$(FASTPLAN_PGO) $(PY) setup.py --quiet build_ext --inplace

vulkan: $(VENV)/.installed
	@if $(PY) tools/check_adapter.py; then \
	    exit 0; \
	elif [ "$$(uname -s)" != Linux ]; then \
	    echo "vulkan: no usable WebGPU adapter; GPU tests will be skipped"; \
	elif [ "$$(id -u)" = 0 ]; then \
	    echo "vulkan: installing Mesa's Vulkan driver (lavapipe)"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get update -qq && apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null \
	    && $(PY) tools/check_adapter.py \
	    || { echo "vulkan: still no usable WebGPU adapter"; [ "$${GPU_REQUIRED:-0}" = 0 ]; }; \
	else \
	    echo "vulkan: no usable WebGPU adapter; GPU tests will be skipped. To run them:"; \
	    echo "    sudo apt-get install mesa-vulkan-drivers libvulkan1"; \
	    [ "$${GPU_REQUIRED:-0}" = 0 ]; \
	fi

test: build vulkan
	$(PY) -m pytest $(PYTEST_ARGS)

demo: build vulkan
	$(VENV)/bin/fuselab demo

clean:
	rm -rf build fastplan/*.so fastplan/*.c fastplan/*.html *.egg-info .pytest_cache .hypothesis
	find . -name __pycache__ -not -path "./$(VENV)/*" -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
