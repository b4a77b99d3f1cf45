# cuzk — common tasks. `make run` proves an example circuit; `make test` runs every test.

CARGO    ?= cargo
VENV     ?= .venv
PYTHON   ?= python3
BIN       = $(or $(CARGO_TARGET_DIR),target)/release/cuzk
# NVRTC from PyPI wheels (no CUDA toolkit needed): kernels compile here, launch only on a GPU.
NVRTC_LIB = $(firstword $(wildcard $(CURDIR)/$(VENV)/lib/python3*/site-packages/nvidia/cu13/lib))
export LD_LIBRARY_PATH := $(if $(NVRTC_LIB),$(NVRTC_LIB):)$(LD_LIBRARY_PATH)

.PHONY: build run test bench nvrtc clean

build:
	$(CARGO) build --release --workspace

run: build
	$(BIN) prove

test:
	$(CARGO) test --release --workspace
	$(CARGO) run --release -q -p cuzk-examples --bin custom-circuit
	$(CARGO) run --release -q -p cuzk-examples --bin embed-engine

bench: build
	$(BIN) bench cpu

# Installs NVRTC 13.0 and the CCCL headers into $(VENV), for the kernel compile tests.
nvrtc:
	test -x $(VENV)/bin/pip || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q "nvidia-cuda-nvrtc==13.0.*" "nvidia-cuda-cccl==13.0.*"

clean:
	$(CARGO) clean
