# The two commands a new user needs:
#   make demo   packs a real many-small-files dataset and trains on it
#   make test   runs every test (C++ through CTest, Python through pytest)
PYTHON ?= python3
BUILD_DIR ?= build/cpp
JOBS ?= $(shell nproc)

.PHONY: all deps cpp check-includes format test-cpp install test-python test demo bench-micro bench clean

all: install

deps:
	PYTHON=$(PYTHON) scripts/install-deps.sh

cpp: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The dependency rule of cpp/README.md: every include runs downhill.
check-includes:
	$(PYTHON) scripts/check_includes.py

# Rewrites the C++ sources in .clang-format's style (tests/python/test_format.py checks it).
format:
	find cpp bindings tests/cpp benchmarks cmake -name '*.h' -o -name '*.cc' | xargs clang-format -i

test-cpp: cpp
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

install: deps
	$(PYTHON) -m pip install -q --no-build-isolation --disable-pip-version-check .

test-python: install
	$(PYTHON) -m pytest -q tests/python

test: check-includes test-cpp test-python

demo: install
	shardloader demo

# Microbenchmarks (Google Benchmark), single-threaded decode rates.
bench-micro: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHARDLOADER_BUILD_BENCHMARKS=ON
	cmake --build $(BUILD_DIR) -j $(JOBS) --target image_decode_benchmark
	$(BUILD_DIR)/image_decode_benchmark

# End-to-end benchmark against the peers (see benchmarks/e2e/README.md).
bench: install
	$(PYTHON) -m pip install -q -r benchmarks/requirements.txt -c benchmarks/constraints.txt
	# The peers pull a CUDA-built torchvision that cannot import beside CPU torch;
	# the benchmark does not use it.
	$(PYTHON) -c "import torchvision" 2>/dev/null || $(PYTHON) -m pip uninstall -y -q torchvision
	$(PYTHON) benchmarks/e2e/run.py

clean:
	rm -rf build
