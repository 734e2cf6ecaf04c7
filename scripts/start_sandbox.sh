#!/usr/bin/env bash
# Start the sandbox server in the background with an EMPTY environment (the zygote
# must never see a secret) and wait until it answers. Prints its PID.
# As root: the hardened backend (namespaces, seccomp, cgroups). Otherwise the
# clearly-labelled insecure development backend, which Django accepts only when
# SANDBOX_ALLOW_INSECURE_DEV_BACKEND=1.
set -euo pipefail
cd "$(dirname "$0")/.."
socket="${1:-$PWD/run/sandbox.sock}"
extra=()
if [ "$(id -u)" -ne 0 ]; then
  echo "WARNING: not root: starting the INSECURE development sandbox (rlimits only)" >&2
  extra+=(--backend insecure-dev --allow-insecure-dev-backend)
fi
mkdir -p run
env -i "$PWD/.venv/bin/python" -m sandbox serve --socket "$socket" --preload chainrule.analysis --preload chainrule.answers.formula_sympy \
    --preload chainrule.code.harness --package-dir "$PWD/chainrule" "${extra[@]}" >>run/sandbox.log 2>&1 &
pid=$!
for _ in $(seq 600); do
  if .venv/bin/python -c "import sys; from sandbox.client import ping; ping(socket_path=sys.argv[1], timeout=1)" \
       "$socket" 2>/dev/null; then
    echo "$pid"; exit 0
  fi
  kill -0 "$pid" 2>/dev/null || { echo "sandbox server exited; see run/sandbox.log" >&2; exit 1; }
  sleep 0.2
done
echo "sandbox server did not answer within 120 s; see run/sandbox.log" >&2; exit 1
