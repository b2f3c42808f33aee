#!/usr/bin/env bash
# Re-fetch the vendored uPlot (the rate charts, static/vendor/uplot/) from the npm registry, at
# exactly the version below, and check the package against the registry's integrity hash and the
# files against the hashes recorded in static/vendor/uplot/README.md. Needs npm and network access
# to the registry; nothing else is downloaded.
set -euo pipefail

VERSION=1.6.32
INTEGRITY='sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw=='

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEST="$ROOT/static/vendor/uplot"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

cd "$WORK"
npm pack --silent "uplot@$VERSION" >/dev/null
TARBALL="uplot-$VERSION.tgz"
GOT="sha512-$(openssl dgst -sha512 -binary "$TARBALL" | base64 -w0)"
if [ "$GOT" != "$INTEGRITY" ]; then
    echo "uplot@$VERSION: integrity $GOT, expected $INTEGRITY" >&2
    exit 1
fi
tar xzf "$TARBALL"
mkdir -p "$DEST"
cp package/dist/uPlot.iife.min.js "$DEST/uPlot-$VERSION.iife.min.js"
cp package/dist/uPlot.min.css "$DEST/uPlot-$VERSION.min.css"
cp package/LICENSE "$DEST/LICENSE"
cd "$DEST"
sha256sum "uPlot-$VERSION.iife.min.js" "uPlot-$VERSION.min.css" LICENSE
# The README records the same hashes: a changed file is a changed package.
grep -q "$(sha256sum "uPlot-$VERSION.iife.min.js" | cut -d' ' -f1)" README.md 2>/dev/null \
    || echo "note: update the sha256 lines in $DEST/README.md" >&2
