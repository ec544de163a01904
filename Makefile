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

.PHONY: setup demo demo-regressed test test-fast bench lint demo-models chromium libreoffice clean

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

test: setup  ## the whole suite, real model tests included
	$(PY) -m pytest

test-fast: setup  ## unit tests only (no model load)
	$(PY) -m pytest -m "not slow"

bench: setup
	$(PY) bench/run.py

lint: setup
	$(VENV)/bin/ruff check src tests bench scripts

demo-models: setup  ## rebuild models/demo (base, adapters, draft) and suites/demo deterministically
	$(PY) scripts/build_demo_models.py
	$(PY) scripts/build_demo_draft.py

chromium:  ## Debian's chromium for the HTML report's browser test (apt, needs root; skipped if installed)
	@test -x /usr/bin/chromium || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }

libreoffice:  ## Debian's LibreOffice Calc for the review CSV's spreadsheet test (apt, needs root; skipped if installed)
	@command -v soffice >/dev/null || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libreoffice-calc-nogui; }

clean:
	rm -rf $(VENV) build *.egg-info
