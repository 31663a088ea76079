# Deep-learning framework benchmark report. `make help` lists the targets.
# On a fresh machine `make report` or `make test` is the only command you type: both build the
# environment first. The venv lives in a cache outside the clone, keyed by the requirements'
# hash, and .venv links to it, so clones and CI runs share one build.

SHELL := /bin/bash
PYTHON ?= python3
VENV_CACHE ?= $(HOME)/.cache/dlbench
# The build, CPU (the default) or GPU: `make setup GPU=1` builds the GPU one and remembers the choice in
# $(BUILD_FILE), so a later `make report` (without GPU=) keeps using it instead of silently switching back.
# Switch back with `make setup GPU=0`. GPU=1 installs requirements.txt less the lines requirements-gpu.txt replaces
# (GPU_REPLACES), then requirements-gpu.txt, and TensorFlow's CUDA build in an environment of its own
# (requirements-tensorflow-gpu.txt): tensorflow[and-cuda] brings CUDA 12's cuDNN and NCCL, whose wheels unpack
# into the same files (nvidia/cudnn/lib/libcudnn.so.9, nvidia/nccl/lib/libnccl.so.2) as torch's and JAX's CUDA 13
# ones, so one environment cannot hold both.
BUILD_FILE := .build
ifeq ($(filter command line environment,$(origin GPU)),)
GPU := $(shell cat $(BUILD_FILE) 2>/dev/null)
endif
GPU_BUILD := $(filter-out 0,$(strip $(GPU)))
GPU_REPLACES := jax jaxlib onnxruntime
EMPTY :=
SPACE := $(EMPTY) $(EMPTY)
REQS := requirements.txt $(if $(GPU_BUILD),requirements-gpu.txt)
REQ_HASH := $(shell cat $(REQS) | sha256sum | cut -c1-12)
VENV_DIR := $(VENV_CACHE)/venv-$(REQ_HASH)$(if $(GPU_BUILD),-gpu)
STAMP := $(VENV_DIR)/.complete
# Frameworks whose pins conflict with the main environment get an environment of their own (own_env below):
# MXNet (it needs numpy 1.23.5), with its Jupyter kernel; on the GPU build TensorFlow's CUDA build.
MXNET_HASH := $(shell cat requirements-mxnet.txt | sha256sum | cut -c1-12)
MXNET_DIR := $(VENV_CACHE)/mxnet-$(MXNET_HASH)
MXNET_VENV := .venv-mxnet
TFGPU_HASH := $(shell cat requirements-tensorflow-gpu.txt | sha256sum | cut -c1-12)
TFGPU_DIR := $(VENV_CACHE)/tensorflow-gpu-$(TFGPU_HASH)
TFGPU_VENV := .venv-tensorflow-gpu
VENV := .venv
# Bring your own environment: `make report PYTHON_ENV=system` runs everything with $(PYTHON) and what it already
# has installed (a vendor container, a cluster's modules, a machine without network): no venv, no pip. Each
# framework it has is used and recorded with its version; each one it lacks becomes a `skipped` record saying so.
# Sweeps and the report need papermill and Jupyter there too; `python3 -m bench gpucheck` needs neither.
PYTHON_ENV ?=
ifneq ($(filter-out system,$(PYTHON_ENV)),)
$(error invalid PYTHON_ENV '$(PYTHON_ENV)'; valid choices: system (use $$(PYTHON) as it is), or leave it unset (the project's venv))
endif
ifeq ($(PYTHON_ENV),system)
PY := $(PYTHON)
TOOL = $(1)
else
BIN := $(VENV)/bin
PY := $(BIN)/python
TOOL = $(BIN)/$(1)
endif
# A GPU here (nvidia-smi lists one): `make report` runs the `gpu` profile, after `bench doctor` has said what each
# framework can reach; else `quick`.
HAS_GPU := $(shell nvidia-smi -L 2>/dev/null | grep -q '^GPU' && echo 1)
PROFILE ?= $(if $(HAS_GPU),gpu,quick)
export PYTHONPATH := $(CURDIR)
export PYTHONDONTWRITEBYTECODE := 1
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: help setup setup-mxnet setup-tensorflow-gpu system-deps test test-full test-gpu-env lint report sweep render lab \
	clean env doctor gpucheck device-wheels noise

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-20s %s\n", $$1, $$2}'
	@echo "  variables: PROFILE=quick|seed|full|training32|gpu  GPU=1 (the CUDA builds; remembered; GPU=0 switches back)"
	@echo "             PYTHON_ENV=system (use $(PYTHON) as it is: no venv, no pip)  VENV_CACHE=$(VENV_CACHE)"
	@echo "  this checkout's build: $(if $(GPU_BUILD),GPU,CPU)$(if $(filter system,$(PYTHON_ENV)), (not used: PYTHON_ENV=system))"

ifneq ($(PYTHON_ENV),system)
setup: $(STAMP) $(if $(GPU_BUILD),setup-tensorflow-gpu) ## create the Python environment (does nothing when it is up to date)
	@if [ -e "$(VENV)" ] && [ ! -L "$(VENV)" ]; then echo "$(VENV) is a real folder, not the cached venv link; remove it" >&2; exit 1; fi
	@[ "$$(readlink "$(VENV)")" = "$(VENV_DIR)" ] || ln -sfn "$(VENV_DIR)" "$(VENV)"
	@[ "$$(cat $(BUILD_FILE) 2>/dev/null)" = "$(GPU_BUILD)" ] || echo "$(GPU_BUILD)" > $(BUILD_FILE)

# No prerequisite on the requirements files: their content is already in VENV_DIR's name, and a fresh
# clone's newer file times must not force a rebuild of a venv that is complete. The GPU build filters the
# replaced lines into a file of their own: pip reads comments in a requirements file, never as arguments.
$(STAMP):
	@echo "building the $(if $(GPU_BUILD),GPU,CPU) environment in $(VENV_DIR) (CPU: about 3 minutes, 8 GB)"
	rm -rf "$(VENV_DIR)"
	mkdir -p "$(VENV_CACHE)"
	$(PYTHON) -m venv "$(VENV_DIR)"
	"$(VENV_DIR)/bin/pip" install --quiet --upgrade pip
ifeq ($(GPU_BUILD),)
	"$(VENV_DIR)/bin/pip" install --quiet -r requirements.txt
else
	grep -v -E '^($(subst $(SPACE),|,$(strip $(GPU_REPLACES))))(\[[^]]*\])? *==' requirements.txt > "$(VENV_DIR)/requirements-shared.txt"
	"$(VENV_DIR)/bin/pip" install --quiet -r "$(VENV_DIR)/requirements-shared.txt" -r requirements-gpu.txt
endif
	touch "$(STAMP)"

# own_env NAME,DIR,LINK,REQUIREMENTS,IMPORT: build a framework's environment of its own once (its log in DIR.log)
# and link it as LINK. A failed build does not stop `make report` / `make test`: that framework's runs are then
# recorded as skipped, and the report's framework table says why.
define own_env
	@if [ ! -e "$(2)/.complete" ]; then \
	  echo "building $(1)'s environment in $(2)"; \
	  rm -rf "$(2)"; mkdir -p "$(VENV_CACHE)"; \
	  ( $(PYTHON) -m venv "$(2)" && "$(2)/bin/pip" install --quiet -r $(4) \
	    && "$(2)/bin/python" -c "import $(5)" && touch "$(2)/.complete" ) > "$(2).log" 2>&1 \
	    || echo "could not build $(1)'s environment (see $(2).log); its runs will be recorded as skipped" >&2; \
	fi
	@if [ -e "$(2)/.complete" ]; then ln -sfn "$(2)" "$(3)"; else rm -f "$(3)"; fi
endef

setup-mxnet: setup ## build MXNet 1.9.1's own environment and Jupyter kernel (bench-mxnet)
	$(call own_env,MXNet,$(MXNET_DIR),$(MXNET_VENV),requirements-mxnet.txt,mxnet)
	@if [ -e "$(MXNET_VENV)" ]; then \
	  "$(MXNET_DIR)/bin/python" -m ipykernel install --prefix "$$(readlink -f $(VENV))" --name bench-mxnet \
	    --display-name "Python 3 (MXNet 1.9.1)" > /dev/null 2>&1; fi

# TensorFlow's GPU runs use this environment's interpreter: `make gpucheck PYTHON=.venv-tensorflow-gpu/bin/python`;
# `bench run --framework tensorflow --device cuda ...` from the main environment reruns itself there (bench/cli.py).
# Sweeps run TensorFlow's GPU configs in its kernel (bench/sweep/jupyter_kernels.py, Adapter.kernel_for) and its CPU
# configs in the main one.
setup-tensorflow-gpu: ## (GPU=1) TensorFlow's CUDA 12 build in an environment of its own
	$(call own_env,TensorFlow (CUDA),$(TFGPU_DIR),$(TFGPU_VENV),requirements-tensorflow-gpu.txt,tensorflow)

else
setup:
	@echo "PYTHON_ENV=system: using $(PY) and the packages it has (no venv, no pip)"
	@$(PY) -c "import bench" || { echo "$(PY) cannot import bench's own dependencies (see requirements.txt)" >&2; exit 1; }
setup-mxnet setup-tensorflow-gpu:
	@echo "PYTHON_ENV=system: $@ builds nothing; frameworks $(PY) lacks are recorded as skipped"
endif

# Chromium renders the PDF (and the HTML screenshot test); poppler's pdftotext/pdftoppm read the PDF
# in tests; slurm-wlm and munge run the one-node Slurm cluster the Slurm executor's tests use
# (tests/local_slurm.py); gperftools' tcmalloc is what PyTorch's processes preload (bench/adapters/allocator.py).
# Installed with apt when missing; if that is impossible the report keeps the HTML
# and the Slurm tests are skipped, each saying why.
system-deps: ## install Chromium, poppler-utils, slurm-wlm, munge and tcmalloc with apt when missing
	@missing=""; \
	command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null || missing="$$missing chromium"; \
	command -v pdftotext >/dev/null || missing="$$missing poppler-utils"; \
	command -v slurmctld >/dev/null || [ -x /usr/sbin/slurmctld ] || missing="$$missing slurm-wlm"; \
	command -v munged >/dev/null || [ -x /usr/sbin/munged ] || missing="$$missing munge"; \
	ldconfig -p 2>/dev/null | grep -q 'libtcmalloc\.so\.4 ' || missing="$$missing libgoogle-perftools4"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  ( $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null ) \
	    || echo "could not install$$missing with apt; PDF export will fail with a message (HTML is still written), the real-Slurm tests are skipped" >&2; \
	fi

# Two tiers: `make test` leaves out the tests marked `full` (pyproject.toml: real sweeps, kill/resume,
# multi-process distributed runs); `make test-full` runs every test, those included. CI runs both.
test: setup setup-mxnet system-deps ## lint, import contracts, unit/integration tests, tiny real runs, nbval on committed results
	$(call TOOL,ruff) check bench tests
	$(call TOOL,lint-imports)
	$(PY) -m pytest -q --durations=15 -m "not full and not gpu_env" tests

test-full: setup setup-mxnet system-deps ## the slow tier (after `make test`): the real tiny sweep (killed, resumed), nbval on it, distributed and Slurm runs
	$(PY) -m pytest -q --durations=15 -m full tests

# Builds the GPU environments (several GB of downloads, in VENV_CACHE) on this machine, GPU or not, and checks each
# framework there: a CUDA build, the CUDA/cuDNN/NCCL it would load, and a clean "no GPU" where there is none.
test-gpu-env: setup ## the GPU build's checks (tests marked gpu_env): builds `make setup GPU=1`'s environments
	$(PY) -m pytest -q --durations=15 -m gpu_env tests

report: setup setup-mxnet system-deps $(if $(HAS_GPU),doctor) sweep render ## run the PROFILE sweep (default: gpu where nvidia-smi lists a GPU, else quick) and export report/report.html + .pdf

sweep: setup ## run (or resume) the PROFILE sweep; finished configs are skipped
	$(PY) -m bench sweep --profile $(PROFILE)

render: setup ## rebuild report/report.html and report/report.pdf from all results/ (no new runs)
	$(PY) -m bench report

lab: setup ## open the notebooks in JupyterLab on localhost
	$(call TOOL,jupyter) lab --ip=127.0.0.1 --no-browser $$( [ "$$(id -u)" = 0 ] && echo --allow-root ) notebooks

lint: setup ## ruff over the package and tests, and the import-layering contracts (pyproject.toml)
	$(call TOOL,ruff) check bench tests
	$(call TOOL,lint-imports)

env: setup ## print this machine's environment manifest
	$(PY) -m bench env

noise: setup setup-mxnet system-deps ## how noisy this machine is for each framework: fresh processes, interleaved (not part of report)
	$(PY) -m bench noise $(NOISE_ARGS)

doctor: setup ## what this machine can run: per framework, its CUDA build, the devices it sees, NCCL, NVML
	$(PY) -m bench doctor

# The wheels a GPU machine without network needs beside its own torch/JAX for .ci/device-check (CPython 3.12, x86-64
# manylinux): fastjsonschema, and keras (pinned as in requirements.txt) with the two of its needs such machines lack.
DEVICE_WHEELS := fastjsonschema==2.22.3 keras==3.15.1 namex==0.1.0 optree==0.20.0
device-wheels: ## download into .wheels/ what .ci/device-check installs on a GPU machine without network
	$(PYTHON) -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
	  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
	  --platform manylinux2014_x86_64 -d .wheels $(DEVICE_WHEELS)

gpucheck: ## verify a GPU machine in minutes with python3 as it is (no venv, no pip, no Jupyter); records in results/
	$(PYTHON) -m bench gpucheck

clean: ## remove the exported report (results are kept)
	rm -rf report/report.html report/report.pdf report/report.ipynb report/figures
