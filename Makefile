# The two commands a newcomer needs: `make run` and `make test`.
# Both install whatever is missing first (system packages when root, the venv).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.lock | md5sum | cut -c1-12)

.PHONY: setup run test test-fast test-unit test-integration test-browser lint bench lock clean

setup: $(STAMP)

$(STAMP): requirements.lock
	bash scripts/setup_system.sh
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.lock
	rm -f $(VENV)/.installed-* && touch $@

run: setup
	bash scripts/run.sh

# ruff, mypy, the import layers (pyproject.toml) and no import cycle between modules.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(PY) scripts/check_cycles.py

# Everything, as CI runs it (.ci/run: PostgreSQL). The subsets below are for the edit-test loop
# (docs/development.md).
test: setup lint
	bash scripts/test.sh

# The engine and the sandbox packages alone: no Django, no services (about two minutes).
test-fast: setup
	$(PY) -m pytest chainrule/tests sandbox/tests -q

# Everything that needs neither a Celery worker, Redis-backed integration nor a browser.
test-unit: setup
	bash scripts/test.sh -m "not integration and not browser" -q

test-integration: setup
	bash scripts/test.sh -m integration -q

test-browser: setup
	bash scripts/test.sh -m browser -q

bench: setup
	$(PY) bench/numeric_bench.py

lock:
	$(PY) -m pip install -q -r requirements-dev.txt
	( echo '# Full pinned set (pip freeze of requirements-dev.txt). Regenerate with `make lock`.'; \
	  $(PY) -m pip freeze | grep -v '^-e' | sed 's/^torch==2.13.0+cpu/torch==2.13.0/' ) > requirements.lock

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache test-output
