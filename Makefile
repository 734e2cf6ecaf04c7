# The two commands a newcomer needs: `make run` and `make test`.
# Both install whatever is missing first (system packages when root, the venv).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.lock | md5sum | cut -c1-12)

.PHONY: setup run test lint unit bench lock clean

setup: $(STAMP)

$(STAMP): requirements.lock
	bash scripts/setup_system.sh
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.lock
	rm -f $(VENV)/.installed-* && touch $@

run: setup
	bash scripts/run.sh

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

test: setup lint
	bash scripts/test.sh

bench: setup
	$(PY) bench/numeric_bench.py

lock:
	$(PY) -m pip install -q -r requirements-dev.txt
	( echo '# Full pinned set (pip freeze of requirements-dev.txt). Regenerate with `make lock`.'; \
	  $(PY) -m pip freeze | grep -v '^-e' | sed 's/^torch==2.13.0+cpu/torch==2.13.0/' ) > requirements.lock

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache test-output
