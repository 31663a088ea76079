# Deep-learning framework benchmark report. `make help` lists the targets.
# On a fresh machine `make report` or `make test` is the only command you type: both build the
# environment first. The venv lives in a cache outside the clone, keyed by the requirements'
# hash, and .venv links to it, so clones and CI runs share one build.

SHELL := /bin/bash
PYTHON ?= python3
GPU ?=
PROFILE ?= quick
VENV_CACHE ?= $(HOME)/.cache/dlbench
REQS := requirements.txt $(if $(GPU),requirements-gpu.txt)
REQ_HASH := $(shell cat $(REQS) | sha256sum | cut -c1-12)
VENV_DIR := $(VENV_CACHE)/venv-$(REQ_HASH)$(if $(GPU),-gpu)
STAMP := $(VENV_DIR)/.complete
# MXNet's own environment and Jupyter kernel (it needs numpy 1.23.5); `make setup-mxnet` builds it.
MXNET_HASH := $(shell cat requirements-mxnet.txt | sha256sum | cut -c1-12)
MXNET_DIR := $(VENV_CACHE)/mxnet-$(MXNET_HASH)
MXNET_VENV := .venv-mxnet
VENV := .venv
BIN := $(VENV)/bin
export PYTHONPATH := $(CURDIR)
export PYTHONDONTWRITEBYTECODE := 1
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: help setup setup-mxnet system-deps test test-full lint report sweep render lab clean env

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'
	@echo "  variables: PROFILE=quick|seed|full|training32  GPU=1 (TensorFlow with CUDA)  VENV_CACHE=$(VENV_CACHE)"

setup: $(BIN)/python ## create the Python environment (does nothing when it is up to date)

# No prerequisite on the requirements files: their content is already in VENV_DIR's name, and a fresh
# clone's newer file times must not force a rebuild of a venv that is complete.
$(STAMP):
	@echo "building the environment in $(VENV_DIR) (about 3 minutes, about 8 GB)"
	rm -rf "$(VENV_DIR)"
	mkdir -p "$(VENV_CACHE)"
	$(PYTHON) -m venv "$(VENV_DIR)"
	"$(VENV_DIR)/bin/pip" install --quiet --upgrade pip
	"$(VENV_DIR)/bin/pip" install --quiet $(if $(GPU),$$(grep -v '^tensorflow-cpu' requirements.txt) -r requirements-gpu.txt,-r requirements.txt)
	touch "$(STAMP)"

$(BIN)/python: $(STAMP)
	@if [ -e "$(VENV)" ] && [ ! -L "$(VENV)" ]; then echo "$(VENV) is a real folder, not the cached venv link; remove it" >&2; exit 1; fi
	ln -sfn "$(VENV_DIR)" "$(VENV)"
	@touch -h "$(VENV)"

# A failed build does not stop `make report` / `make test`: MXNet's runs are then recorded as skipped, and the
# report's framework table says why (the log stays in $(MXNET_DIR).log).
setup-mxnet: setup ## build MXNet 1.9.1's own environment and Jupyter kernel (bench-mxnet)
	@if [ ! -e "$(MXNET_DIR)/.complete" ]; then \
	  echo "building MXNet's environment in $(MXNET_DIR) (about 1 minute, 0.5 GB)"; \
	  rm -rf "$(MXNET_DIR)"; \
	  ( $(PYTHON) -m venv "$(MXNET_DIR)" && "$(MXNET_DIR)/bin/pip" install --quiet -r requirements-mxnet.txt \
	    && "$(MXNET_DIR)/bin/python" -c "import mxnet" && touch "$(MXNET_DIR)/.complete" ) > "$(MXNET_DIR).log" 2>&1 \
	    || echo "could not build MXNet's environment (see $(MXNET_DIR).log); MXNet runs will be recorded as skipped" >&2; \
	fi
	@if [ -e "$(MXNET_DIR)/.complete" ]; then \
	  ln -sfn "$(MXNET_DIR)" "$(MXNET_VENV)"; \
	  "$(MXNET_DIR)/bin/python" -m ipykernel install --prefix "$$(readlink -f $(VENV))" --name bench-mxnet \
	    --display-name "Python 3 (MXNet 1.9.1)" > /dev/null 2>&1; \
	else rm -f "$(MXNET_VENV)"; fi

# Chromium renders the PDF (and the HTML screenshot test); poppler's pdftotext/pdftoppm read the PDF
# in tests; slurm-wlm and munge run the one-node Slurm cluster the Slurm executor's tests use
# (tests/local_slurm.py). Installed with apt when missing; if that is impossible the report keeps the HTML
# and the Slurm tests are skipped, each saying why.
system-deps: ## install Chromium, poppler-utils, slurm-wlm and munge with apt when missing
	@missing=""; \
	command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null || missing="$$missing chromium"; \
	command -v pdftotext >/dev/null || missing="$$missing poppler-utils"; \
	command -v slurmctld >/dev/null || [ -x /usr/sbin/slurmctld ] || missing="$$missing slurm-wlm"; \
	command -v munged >/dev/null || [ -x /usr/sbin/munged ] || missing="$$missing munge"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  ( $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null ) \
	    || echo "could not install$$missing with apt; PDF export will fail with a message (HTML is still written), the real-Slurm tests are skipped" >&2; \
	fi

# Two tiers: `make test` leaves out the tests marked `full` (pyproject.toml: real sweeps, kill/resume,
# multi-process distributed runs); `make test-full` runs every test, those included. CI runs both.
test: setup setup-mxnet system-deps ## lint, import contracts, unit/integration tests, tiny real runs, nbval on committed results
	$(BIN)/ruff check bench tests
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q --durations=15 -m "not full" tests

test-full: setup setup-mxnet system-deps ## the slow tier (after `make test`): the real tiny sweep (killed, resumed), nbval on it, distributed and Slurm runs
	$(BIN)/python -m pytest -q --durations=15 -m full tests

report: setup setup-mxnet system-deps sweep render ## run the PROFILE sweep (default quick) and export report/report.html + .pdf

sweep: setup ## run (or resume) the PROFILE sweep; finished configs are skipped
	$(BIN)/python -m bench sweep --profile $(PROFILE)

render: setup ## rebuild report/report.html and report/report.pdf from all results/ (no new runs)
	$(BIN)/python -m bench report

lab: setup ## open the notebooks in JupyterLab on localhost
	$(BIN)/jupyter lab --ip=127.0.0.1 --no-browser $$( [ "$$(id -u)" = 0 ] && echo --allow-root ) notebooks

lint: setup ## ruff over the package and tests, and the import-layering contracts (pyproject.toml)
	$(BIN)/ruff check bench tests
	$(BIN)/lint-imports

env: setup ## print this machine's environment manifest
	$(BIN)/python -m bench env

clean: ## remove the exported report (results are kept)
	rm -rf report/report.html report/report.pdf report/report.ipynb report/figures
