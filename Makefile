# cuzk — common tasks. `make run` proves an example circuit; `make test` runs every test.

CARGO    ?= cargo
VENV     ?= .venv
PYTHON   ?= python3
TARGET    = $(or $(CARGO_TARGET_DIR),target)
BIN       = $(TARGET)/release/cuzk
GPU_DIR  ?= .gpu
# bash: `make test` keeps cargo's exit status through `tee` (PIPESTATUS).
SHELL     = /bin/bash
# NVRTC from PyPI wheels (no CUDA toolkit needed): kernels compile here, launch only on a GPU.
NVRTC_LIB = $(firstword $(wildcard $(CURDIR)/$(VENV)/lib/python3*/site-packages/nvidia/cu13/lib))
export LD_LIBRARY_PATH := $(if $(NVRTC_LIB),$(NVRTC_LIB):)$(LD_LIBRARY_PATH)

.PHONY: build run test test-gpu gpu-bundle fuzz bench nvrtc clean

build:
	$(CARGO) build --release --workspace

run: build
	$(BIN) prove

test:
	mkdir -p $(TARGET); $(CARGO) test --release --workspace 2>&1 | tee $(TARGET)/test.log; exit $${PIPESTATUS[0]}
	$(CARGO) run --release -q -p cuzk-examples --bin custom-circuit
	$(CARGO) run --release -q -p cuzk-examples --bin embed-engine
	$(CARGO) run --release -q -p cuzk-examples --bin embed-daemon
	@tests/gpu/ignored-summary.sh $(TARGET)/test.log

# The GPU tests (engine/tests/gpu_*.rs, actors/tests/gpu_*.rs, ignored by `make test`), on a
# machine with a CUDA GPU and cargo.
test-gpu:
	$(CARGO) test --release -p cuzk-engine --test 'gpu_*' -- --ignored --test-threads=1
	$(CARGO) test --release -p cuzk-actors --test 'gpu_*' -- --ignored --test-threads=1

# The GPU test binaries, `cuzk` and prebuilt kernels into $(GPU_DIR), for a GPU machine without
# cargo: there, `$(GPU_DIR)/run-gpu-tests.sh $(GPU_DIR)`.
gpu-bundle:
	CARGO=$(CARGO) tests/gpu/bundle.sh $(GPU_DIR)

# cargo-fuzz (nightly) over the parameter-file parser and the decode cache (srs/fuzz), each for
# FUZZ_SECONDS from the corpus kept in srs/fuzz/corpus (new finds go to $(TARGET)/fuzz, not the repo).
FUZZ_SECONDS ?= 30
FUZZ_OUT      = $(abspath $(TARGET))/fuzz
fuzz:
	@cd srs/fuzz && for t in params cache; do \
	  mkdir -p $(FUZZ_OUT)/$$t; \
	  $(CARGO) +nightly fuzz run $$t $(FUZZ_OUT)/$$t corpus/$$t -- -max_total_time=$(FUZZ_SECONDS) \
	    -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 >$(FUZZ_OUT)/$$t.log 2>&1 \
	    || { tail -60 $(FUZZ_OUT)/$$t.log; echo "fuzz $$t FAILED (log $(FUZZ_OUT)/$$t.log)"; exit 1; }; \
	  echo "fuzz $$t: $$(grep -E '^Done [0-9]+ runs' $(FUZZ_OUT)/$$t.log)"; \
	done

bench: build
	$(BIN) bench cpu

# Installs NVRTC 13.0 and the CCCL headers into $(VENV), for the kernel compile tests.
nvrtc:
	test -x $(VENV)/bin/pip || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q "nvidia-cuda-nvrtc==13.0.*" "nvidia-cuda-cccl==13.0.*"

clean:
	$(CARGO) clean
