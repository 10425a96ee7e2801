#!/usr/bin/env bash
# Checks the Helm chart deploy/helm/enterprise-ai:
#   1. tools: Helm v3.22.0 (the one on PATH when it is that version, else built once from its Go module into the
#      cache), kubernetes-validate 1.37.0 (a venv in the cache), the Prometheus Operator's CRDs (its Go module,
#      pinned, from the Go module proxy);
#   2. the chart's copies of the dashboards and alerts (files/) are the same as deploy/grafana's, when that exists;
#   3. `helm lint --strict` with each ci/*.yaml;
#   4. `helm template` with each ci/*.yaml, every object validated (deploy/helm/tools/validate_manifests.py):
#      Kubernetes kinds with kubernetes-validate (strict, Kubernetes $KUBE_VERSION), ServiceMonitor/PodMonitor/
#      PrometheusRule against the prometheus-operator CRDs' own schemas, plus labels and pod security rules;
#   5. each tests/*.yaml must fail to render, with the message its `# expect-error:` line gives.
# Exit status 0 only when everything passed. Prints the time of each stage.
#
#   scripts/helm-check.sh          # check
#   scripts/helm-check.sh --sync   # copy deploy/grafana/dashboards/*.json and deploy/grafana/alerts.yaml into the chart
#
# Environment: XDG_CACHE_HOME (the cache is ${XDG_CACHE_HOME:-$HOME/.cache}/eai-gpu/helm-v3.22.0), EAI_KUBE_VERSION
# (1.37.0), HELM_CHECK_KEEP (a folder to keep the rendered manifests in).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CHART="$ROOT/deploy/helm/enterprise-ai"
GRAFANA="$ROOT/deploy/grafana"
VALIDATOR="$ROOT/deploy/helm/tools/validate_manifests.py"

HELM_VERSION=v3.22.0
# The Kubernetes minor the Helm build targets (its client-go v0.37 is Kubernetes 1.37), as Helm's Makefile sets it.
HELM_K8S_MINOR=37
KUBERNETES_VALIDATE_VERSION=1.37.0
KUBE_VERSION=${EAI_KUBE_VERSION:-1.37.0}
PROMETHEUS_OPERATOR_VERSION=v0.85.0
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/eai-gpu/helm-$HELM_VERSION"

say() { printf '%s\n' "$*"; }
die() { printf 'helm-check: FAIL: %s\n' "$*" >&2; exit 1; }

# --- stage timing -------------------------------------------------------------------------------------------------
STAGES=()
STAGE_NAME=""
STAGE_START=0
now() { date +%s.%N; }
stage() {
    stage_end
    STAGE_NAME=$1
    STAGE_START=$(now)
    say ""
    say "== $STAGE_NAME"
}
stage_end() {
    if [[ -n $STAGE_NAME ]]; then
        local secs
        secs=$(awk -v a="$STAGE_START" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
        STAGES+=("$(printf '%7ss  %s' "$secs" "$STAGE_NAME")")
        say "   ($STAGE_NAME: ${secs}s)"
        STAGE_NAME=""
    fi
}
TOTAL_START=$(now)
report() {
    local rc=$1
    stage_end
    if ((${#STAGES[@]})); then
        say ""
        say "Stage times:"
        printf '%s\n' "${STAGES[@]}"
        say "$(awk -v a="$TOTAL_START" -v b="$(now)" 'BEGIN { printf "%7.1fs  total", b - a }')"
    fi
    if ((rc == 0)); then say "helm-check: all checks passed"; else say "helm-check: FAILED (exit $rc)" >&2; fi
}

# --- the dashboards and alerts: deploy/grafana is the canonical copy ----------------------------------------------
grafana_json() { find "$1" -maxdepth 1 -type f -name '*.json' -printf '%f\n' 2>/dev/null | LC_ALL=C sort; }

sync_copies() {
    [[ -d $GRAFANA ]] || die "deploy/grafana does not exist: nothing to copy"
    [[ -f $GRAFANA/alerts.yaml ]] || die "deploy/grafana/alerts.yaml is missing"
    [[ -n $(grafana_json "$GRAFANA/dashboards") ]] || die "deploy/grafana/dashboards/ has no *.json"
    mkdir -p "$CHART/files/dashboards"
    find "$CHART/files/dashboards" -maxdepth 1 -type f -name '*.json' -delete
    cp "$GRAFANA"/dashboards/*.json "$CHART/files/dashboards/"
    cp "$GRAFANA/alerts.yaml" "$CHART/files/alerts.yaml"
    say "copied $(grafana_json "$GRAFANA/dashboards" | wc -l) dashboards and alerts.yaml from deploy/grafana into deploy/helm/enterprise-ai/files/"
}

check_copies() {
    if [[ ! -d $GRAFANA ]]; then
        say "NOTE: deploy/grafana does not exist yet: the comparison of the chart's files/dashboards/*.json and"
        say "      files/alerts.yaml with it is skipped (the chart renders its placeholders)."
        return 0
    fi
    local bad=0 f
    if [[ ! -f $GRAFANA/alerts.yaml ]]; then
        say "  deploy/grafana/alerts.yaml is missing"; bad=1
    elif ! cmp -s "$GRAFANA/alerts.yaml" "$CHART/files/alerts.yaml"; then
        say "  files/alerts.yaml differs from deploy/grafana/alerts.yaml"; bad=1
    fi
    local want have
    want=$(grafana_json "$GRAFANA/dashboards")
    have=$(grafana_json "$CHART/files/dashboards")
    [[ -n $want ]] || { say "  deploy/grafana/dashboards/ has no *.json"; bad=1; }
    while IFS= read -r f; do
        [[ -n $f ]] || continue
        if [[ ! -f $CHART/files/dashboards/$f ]]; then
            say "  files/dashboards/$f is missing (deploy/grafana/dashboards/$f has it)"; bad=1
        elif ! cmp -s "$GRAFANA/dashboards/$f" "$CHART/files/dashboards/$f"; then
            say "  files/dashboards/$f differs from deploy/grafana/dashboards/$f"; bad=1
        fi
    done <<<"$want"
    while IFS= read -r f; do
        [[ -n $f ]] || continue
        [[ -f $GRAFANA/dashboards/$f ]] || { say "  files/dashboards/$f is not in deploy/grafana/dashboards/ (stale)"; bad=1; }
    done <<<"$have"
    if ((bad)); then
        die "the chart's copies of the dashboards/alerts are out of date: run scripts/helm-check.sh --sync (then commit deploy/helm/enterprise-ai/files/)"
    fi
    say "ok   files/alerts.yaml and $(wc -l <<<"$want") files/dashboards/*.json are identical to deploy/grafana's"
}

if [[ ${1:-} == --sync ]]; then
    sync_copies
    exit 0
elif [[ $# -gt 0 ]]; then
    die "usage: scripts/helm-check.sh [--sync]"
fi

trap 'report $?' EXIT

# --- 1. tools ----------------------------------------------------------------------------------------------------
stage "tools: helm $HELM_VERSION"
helm_version() { "$1" version --template '{{.Version}}' 2>/dev/null || true; }
HELM=""
if command -v helm >/dev/null && [[ $(helm_version helm) == "$HELM_VERSION" ]]; then
    HELM=$(command -v helm)
    say "using $HELM (on PATH)"
elif [[ -x $CACHE/bin/helm && $(helm_version "$CACHE/bin/helm") == "$HELM_VERSION" ]]; then
    HELM="$CACHE/bin/helm"
    say "using $HELM (cached)"
else
    command -v go >/dev/null || die "no helm $HELM_VERSION on PATH and no Go to build it (install Go, or put helm $HELM_VERSION on PATH)"
    say "building helm $HELM_VERSION from its Go module into $CACHE/bin (once; a few minutes)..."
    mkdir -p "$CACHE/bin"
    # The ldflags are those of Helm's release Makefile: its version, and the Kubernetes version its lint and
    # default capabilities assume (without them a `go install` build says v3.22 and Kubernetes 1.20).
    ldflags="-w -s -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
    for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
        ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$HELM_K8S_MINOR"
    done
    if ! (cd "$CACHE" && CGO_ENABLED=0 GOBIN="$CACHE/bin" go install -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION") \
        >"$CACHE/go-install.log" 2>&1; then
        grep -v '^go: downloading' "$CACHE/go-install.log" | tail -n 40 >&2
        die "go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION failed (is the Go module proxy reachable?); log: $CACHE/go-install.log"
    fi
    HELM="$CACHE/bin/helm"
    [[ $(helm_version "$HELM") == "$HELM_VERSION" ]] || die "the helm just built says $(helm_version "$HELM"), not $HELM_VERSION"
fi
"$HELM" version

stage "tools: kubernetes-validate $KUBERNETES_VALIDATE_VERSION"
VENV="$CACHE/venv"
if ! "$VENV/bin/kubernetes-validate" --version 2>/dev/null | grep -qx "$KUBERNETES_VALIDATE_VERSION"; then
    say "installing kubernetes-validate==$KUBERNETES_VALIDATE_VERSION into $VENV..."
    rm -rf "$VENV"
    python3 -m venv "$VENV" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" \
        || die "pip install kubernetes-validate==$KUBERNETES_VALIDATE_VERSION failed"
fi
say "kubernetes-validate $("$VENV/bin/kubernetes-validate" --version), Kubernetes schemas up to" \
    "$("$VENV/bin/python" -c 'import kubernetes_validate.utils as u; print(u.latest_version())'); validating against $KUBE_VERSION (strict)"

stage "tools: prometheus-operator $PROMETHEUS_OPERATOR_VERSION CRDs"
# kubernetes-validate has no schema for CRDs (it only warns); the operator's own CRD files are in its Go module.
CRD_DIR=""
if command -v go >/dev/null; then
    mkdir -p "$CACHE"
    mod_dir=$(cd "$CACHE" && go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" \
        | "$VENV/bin/python" -c 'import json, sys; d = json.load(sys.stdin); print(d.get("Dir") or ""); sys.exit(1 if d.get("Error") else 0)') \
        || die "go mod download github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION failed"
    CRD_DIR="$mod_dir/example/prometheus-operator-crd"
fi
[[ -f $CRD_DIR/monitoring.coreos.com_servicemonitors.yaml ]] \
    || die "the prometheus-operator CRDs are missing (looked in ${CRD_DIR:-<no Go>}): the CRD objects cannot be validated"
say "kubernetes-validate has no schema for a CRD (its CLI only warns, exit 0): ServiceMonitor, PodMonitor and"
say "PrometheusRule are validated instead against the openAPIV3Schema of the prometheus-operator $PROMETHEUS_OPERATOR_VERSION"
say "CRDs in $CRD_DIR (made strict: unknown fields fail); any other kind kubernetes-validate does not know fails."

# --- 2. dashboards and alerts ---------------------------------------------------------------------------------------
stage "dashboards and alerts: chart copies vs deploy/grafana"
check_copies

# --- 3. lint ------------------------------------------------------------------------------------------------------------
shopt -s nullglob
CI_VALUES=("$CHART"/ci/*.yaml)
MUST_FAIL=("$CHART"/tests/*.yaml)
shopt -u nullglob
((${#CI_VALUES[@]})) || die "no values files in deploy/helm/enterprise-ai/ci/"

stage "helm lint --strict (${#CI_VALUES[@]} ci values files)"
"$VENV/bin/python" - "$CHART/values.schema.json" <<'PY' || die "values.schema.json is not a valid JSON Schema draft-07 document"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
assert schema.get("$schema") == "http://json-schema.org/draft-07/schema#", "$schema must be draft-07"
jsonschema.Draft7Validator.check_schema(schema)
assert schema.get("additionalProperties") is False, "unknown top-level keys must be refused"
print("ok   values.schema.json is a valid draft-07 schema (top level: additionalProperties false)")
PY
for values in "${CI_VALUES[@]}"; do
    name=${values#"$ROOT"/}
    if out=$("$HELM" lint --strict --kube-version "$KUBE_VERSION" "$CHART" -f "$values" 2>&1); then
        say "ok   helm lint --strict -f $name"
    else
        say "$out"
        die "helm lint --strict failed with $name"
    fi
done

# --- 4. render and validate -------------------------------------------------------------------------------------------
stage "helm template + validation (${#CI_VALUES[@]} ci values files)"
OUT=$(mktemp -d)
trap 'rc=$?; rm -rf "$OUT"; report $rc' EXIT
rendered=()
for values in "${CI_VALUES[@]}"; do
    name=${values#"$ROOT"/}
    file="$OUT/$(basename "$values" .yaml).yaml"
    if ! "$HELM" template eai "$CHART" --namespace eai-gpu --kube-version "$KUBE_VERSION" -f "$values" >"$file" 2>"$file.err"; then
        cat "$file.err"
        die "helm template failed with $name"
    fi
    say "ok   helm template -f $name: $(grep -c '^kind:' "$file") objects"
    rendered+=("$file")
done
if ! "$VENV/bin/python" "$VALIDATOR" --kube-version "$KUBE_VERSION" --crd-dir "$CRD_DIR" \
    --alerts "$CHART/files/alerts.yaml" "${rendered[@]}"; then
    die "rendered manifests are not valid (above)"
fi
if [[ -n ${HELM_CHECK_KEEP:-} ]]; then
    mkdir -p "$HELM_CHECK_KEEP" && cp "${rendered[@]}" "$HELM_CHECK_KEEP/"
    say "rendered manifests kept in $HELM_CHECK_KEEP"
fi

# --- 5. values that must be refused ---------------------------------------------------------------------------------
stage "must-fail values (${#MUST_FAIL[@]} files in tests/)"
((${#MUST_FAIL[@]})) || die "no must-fail values files in deploy/helm/enterprise-ai/tests/"
for values in "${MUST_FAIL[@]}"; do
    name=${values#"$ROOT"/}
    expect=$(sed -n 's/^# expect-error: //p' "$values" | head -n 1)
    [[ -n $expect ]] || die "$name has no '# expect-error: <message>' line"
    if out=$("$HELM" template eai "$CHART" --namespace eai-gpu --kube-version "$KUBE_VERSION" -f "$values" 2>&1); then
        die "$name rendered, but it must be refused with: $expect"
    fi
    if ! grep -qF -- "$expect" <<<"$out"; then
        say "$out"
        die "$name was refused, but without the expected message: $expect"
    fi
    say "ok   $name refused with: $expect"
done
