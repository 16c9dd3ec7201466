# The two commands a new user needs:
#   make demo   packs a real many-small-files dataset and trains on it
#   make test   runs every test (C++ through CTest, Python through pytest)
PYTHON ?= python3
BUILD_DIR ?= build/cpp
JOBS ?= $(shell nproc)

.PHONY: all deps cpp check-includes format test-cpp install test-python test demo bench-micro bench clean \
	fuzz-build fuzz test-fuzz-corpus test-stress

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
	find cpp bindings tests/cpp tests/fuzz benchmarks cmake -name '*.h' -o -name '*.cc' | xargs clang-format -i

test-cpp: cpp
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

install: deps
	$(PYTHON) -m pip install -q --no-build-isolation --disable-pip-version-check .

test-python: install
	$(PYTHON) -m pytest -q tests/python

test: check-includes test-cpp test-fuzz-corpus test-python

# Stress tests that are not yet reliable (tests/python/test_fork.py: a rare
# hang in a forked child remains), kept out of `make test`.
test-stress: install
	$(PYTHON) -m pytest -q -m stress tests/python

# libFuzzer targets (tests/fuzz/README.md): a clang build with ASan + UBSan
# in a directory of its own; the library is instrumented too.
FUZZ_DIR ?= build/fuzz
FUZZ_SECONDS ?= 60
FUZZ_MAX_LEN ?= 65536
FUZZERS = $(sort $(basename $(notdir $(wildcard tests/fuzz/*_fuzzer.cc))))

fuzz-build: deps
	cmake -S . -B $(FUZZ_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_COMPILER=clang++ -DSHARDLOADER_BUILD_FUZZERS=ON \
	  -DSHARDLOADER_BUILD_TESTS=OFF -DSHARDLOADER_INSTALL=OFF
	cmake --build $(FUZZ_DIR) -j $(JOBS)

# Every target over its committed seeds only (seconds), so a fixed crash
# stays fixed.
test-fuzz-corpus: fuzz-build
	@for fuzzer in $(FUZZERS); do \
	  name=$${fuzzer%_fuzzer}; echo "fuzz corpus: $$name"; \
	  $(FUZZ_DIR)/$$fuzzer -timeout=10 -rss_limit_mb=2048 tests/fuzz/corpus/$$name/* \
	    > $(FUZZ_DIR)/$$name-corpus.log 2>&1 \
	    || { tail -n 60 $(FUZZ_DIR)/$$name-corpus.log; exit 1; }; \
	done

# Each target for FUZZ_SECONDS, one after another, on a scratch copy of its
# seeds ($(FUZZ_DIR)/corpus/<name>, kept between runs); fails on any crash,
# leak, timeout or out-of-memory, leaving the input in $(FUZZ_DIR)/artifacts/.
fuzz: fuzz-build
	@mkdir -p $(FUZZ_DIR)/artifacts
	@for fuzzer in $(FUZZERS); do \
	  name=$${fuzzer%_fuzzer}; echo "fuzz: $$name for $(FUZZ_SECONDS) s"; \
	  mkdir -p $(FUZZ_DIR)/corpus/$$name; \
	  cp -n tests/fuzz/corpus/$$name/* $(FUZZ_DIR)/corpus/$$name/ 2>/dev/null || true; \
	  $(FUZZ_DIR)/$$fuzzer $(FUZZ_DIR)/corpus/$$name -max_total_time=$(FUZZ_SECONDS) \
	    -max_len=$(FUZZ_MAX_LEN) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_DIR)/artifacts/$$name- \
	    $$(test -f tests/fuzz/$$name.dict && echo -dict=tests/fuzz/$$name.dict) \
	    > $(FUZZ_DIR)/$$name-fuzz.log 2>&1 \
	    || { tail -n 80 $(FUZZ_DIR)/$$name-fuzz.log; exit 1; }; \
	  grep -E '^#[0-9]+.*DONE|stat::(number_of_executed_units|average_exec_per_sec)' \
	    $(FUZZ_DIR)/$$name-fuzz.log; \
	done

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
