#!/usr/bin/env bash
# Vendor axe-core (the accessibility checker the browser tests inject into the student pages) from
# npm into static/vendor/axe-core/. Its built axe.min.js is copied as published; the output is
# committed, so nothing is fetched at test time. No page of the app loads it: only the tests do.
# Usage: bash scripts/vendor_axe.sh   (needs npm; run again after changing the version)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$ROOT/static/vendor/axe-core"
VERSION="4.14.1"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

cd "$WORK"
npm init -y >/dev/null
npm install --no-audit --no-fund --save-exact "axe-core@$VERSION" >/dev/null
mkdir -p "$OUT"
cp node_modules/axe-core/axe.min.js "$OUT/axe.min.js"
{
  echo "axe-core $VERSION (https://github.com/dequelabs/axe-core), copied by scripts/vendor_axe.sh"
  echo "from the npm package's axe.min.js. Mozilla Public License 2.0:"
  echo
  cat node_modules/axe-core/LICENSE
} > "$OUT/LICENSE.txt"
echo "wrote $OUT/axe.min.js ($(wc -c < "$OUT/axe.min.js") bytes)"
