# The two commands a new user needs:
#   make demo   packs a real many-small-files dataset and trains on it
#   make test   runs every test (C++ through CTest, Python through pytest)
PYTHON ?= python3
BUILD_DIR ?= build/cpp
JOBS ?= $(shell nproc)

.PHONY: all deps cpp test-cpp install test-python test demo clean

all: install

deps:
	PYTHON=$(PYTHON) scripts/install-deps.sh

cpp: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD_DIR) -j $(JOBS)

test-cpp: cpp
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

install: deps
	$(PYTHON) -m pip install -q --no-build-isolation --disable-pip-version-check .

test-python: install
	$(PYTHON) -m pytest -q tests/python

test: test-cpp test-python

demo: install
	shardloader demo

clean:
	rm -rf build
