# Two commands: `make demo` (install + the whole study offline on CPU) and `make test`.
# Torch is pinned to the CPU build via constraints.txt so a fresh machine never pulls CUDA wheels.
SHELL := /bin/bash
VENV ?= .venv
BIN := $(VENV)/bin
PYTHON ?= python3
CORES ?= 2
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: install demo test test-fast bench gpu-check plan lint clean-demo

# The venv (below), and the folders dvc.yaml's plots: names, empty until a study writes its file
# there: `dvc plots show` warns about a missing folder and draws nothing from an empty one, so a
# fresh clone prints no warning.
install: $(VENV)/.installed
	@$(BIN)/python -c "import os, yaml; [os.makedirs(next(iter(p)), exist_ok=True) for p in yaml.safe_load(open('dvc.yaml'))['plots']]"

# torch through pip (it finds the CPU wheel pip is configured for; uv would not); the ~180 other
# pinned packages through uv, which resolves and installs them in ~25 s where pip takes ~70 s
# (measured on a 2-core machine like CI's; same versions: constraints.txt pins every package). uv
# compiles the bytecode up front as pip does, so no job pays for it at import time. If uv cannot
# be installed or fails, pip installs the same pins.
$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -c constraints.txt torch==2.13.0
	( $(BIN)/pip install -q -c constraints.txt uv \
	  && $(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python -c constraints.txt -e ".[workflow,demo,test]" ) \
	  || $(BIN)/pip install -q -c constraints.txt -e ".[workflow,demo,test]"
	$(BIN)/python workflow/scripts/vega_bundle.py --out $(VENV)/share/embtune/dvc-plots.html \
	  || ( $(BIN)/python workflow/scripts/vega_bundle.py --cdn --out $(VENV)/share/embtune/dvc-plots.html \
	       && echo "WARNING: no npm: dvc plots show draws only online (workflow/scripts/vega_bundle.py)" )
	touch $@

demo: install
	$(BIN)/snakemake --configfile presets/demo.yaml --cores $(CORES) --logger embtune
	@echo "Results in results/demo/: start with results/demo/analysis/report.md"
	@echo "Figures: results/demo/analysis/figures/  Recipe: results/demo/analysis/recipes/"
	@echo "One HTML file: .venv/bin/snakemake --configfile presets/demo.yaml --report report.html"

test: install lint
	bash .ci/install_slurm.sh || echo "WARNING: could not install SLURM; the real-SLURM test will skip LOUDLY"
	bash .ci/install_chromium.sh || echo "WARNING: could not install chromium; the report's browser test will skip LOUDLY"
	$(BIN)/pytest -v -n $(CORES) --durations=25

# The inner loop: unit and contract tests without the slow ones, on $(CORES) xdist workers.
test-fast: install
	$(BIN)/pytest -q -n $(CORES) -m "not slow" tests/unit tests/contracts

bench: install
	for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# On a machine with a CUDA GPU (and a CUDA build of torch in the venv): the CUDA/bf16 tests and the
# GPU benchmarks (training MFU vs sentence-transformers, paper-size evaluation time). Elsewhere it
# says why and exits 0. benchmarks/gpu_check.py
gpu-check: install
	$(BIN)/python benchmarks/gpu_check.py

plan: install
	$(BIN)/snakemake -n --quiet rules

# ruff (pyflakes, import order, complexity: [tool.ruff] in pyproject.toml), snakefmt on the
# workflow, snakemake --lint (waivers, each with its reason: workflow/scripts/snakemake_lint.py)
# and the DVC stages' code deps against the import closures (workflow/scripts/dvc_code_deps.py).
lint: install
	$(BIN)/ruff check src tests benchmarks workflow/scripts
	$(BIN)/snakefmt --check Snakefile workflow/rules
	$(BIN)/python workflow/scripts/snakemake_lint.py --configfile presets/demo.yaml
	$(BIN)/python workflow/scripts/dvc_code_deps.py --check

clean-demo:
	rm -rf results/demo data/processed/demo
