#!/usr/bin/env bash
# Vendor the reference-program editor (CodeMirror 6) from npm into static/vendor/codemirror/.
# Builds one ES bundle with esbuild; the output is committed, so nothing is fetched at run time.
# Usage: bash scripts/vendor_js.sh   (needs node and npm; run again after changing the versions)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$ROOT/static/vendor/codemirror"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

PACKAGES=(
  "@codemirror/state@6.7.6" "@codemirror/view@6.43.15" "@codemirror/commands@6.11.1"
  "@codemirror/language@6.13.1" "@codemirror/lang-python@6.2.1" "esbuild@0.28.2"
)
cd "$WORK"
npm init -y >/dev/null
npm install --no-audit --no-fund --save-exact "${PACKAGES[@]}" >/dev/null
cp "$ROOT/scripts/editor/editor_entry.js" entry.js
mkdir -p "$OUT"
./node_modules/.bin/esbuild entry.js --bundle --format=esm --minify --legal-comments=eof \
  --outfile="$OUT/editor.bundle.js"
{
  echo "CodeMirror 6 bundle built by scripts/vendor_js.sh from:"
  npm ls --all --parseable --long 2>/dev/null | sed -n 's#.*node_modules/\(.*\)#\1#p' | grep -v '^esbuild\|^@esbuild' | sort -u
  echo
  echo "All MIT licensed:"
  cat node_modules/@codemirror/state/LICENSE
} > "$OUT/LICENSE.txt"
echo "wrote $OUT/editor.bundle.js ($(wc -c < "$OUT/editor.bundle.js") bytes)"
