#!/usr/bin/env bash
# `make test`: the whole suite (unit, integration against real services, browser).
set -euo pipefail
cd "$(dirname "$0")/.."
export DJANGO_SETTINGS_MODULE=config.settings
mkdir -p test-output
.venv/bin/python -m pytest "$@"
