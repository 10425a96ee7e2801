#!/usr/bin/env python3
"""Validates the manifests `helm template` rendered (called by scripts/helm-check.sh, with the venv's python).

Every document is checked three ways:

* Kubernetes kinds: kubernetes-validate's schemas of one Kubernetes version, strict (an unknown field fails). A kind
  it has no schema for fails too (kubernetes-validate itself only warns), unless it is one of the CRDs below.
* The Prometheus Operator's CRDs (ServiceMonitor, PodMonitor, PrometheusRule; kubernetes-validate knows no CRD):
  the openAPIV3Schema of the CRD files of a pinned prometheus-operator release, made strict the way
  `kubectl apply --validate=strict` is (an object's unknown field fails unless the schema preserves unknown
  fields). CEL rules (x-kubernetes-validations) are not evaluated.
* Our own rules, for every object: metadata.name a DNS-1123 name, label keys and values valid, ConfigMap and
  Secret keys valid, no two objects of one kind with one name; the sampler's attribution.toml read as the sampler
  reads it (known keys only, UUID tenant ids, every [[deployment]] matching something); every pod runs as non-root with a read-only root filesystem, no privilege escalation,
  ALL capabilities dropped, the RuntimeDefault seccomp profile and no service account token (the spool-owner init
  container, root with CAP_CHOWN/CAP_FOWNER only, is the one exception).

Usage: validate_manifests.py --kube-version 1.37.0 --crd-dir DIR [--alerts files/alerts.yaml] FILE...
Exit 0 when every document of every file passes; 1 otherwise, each failure on its own line.
"""

import argparse
import copy
import os
import re
import sys
import uuid

try:
    import tomllib  # Python 3.11+
except ImportError:  # pragma: no cover
    tomllib = None

import jsonschema
import kubernetes_validate.utils as kv
import yaml

CRD_FILES = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "monitoring.coreos.com_servicemonitors.yaml",
    ("monitoring.coreos.com/v1", "PodMonitor"): "monitoring.coreos.com_podmonitors.yaml",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "monitoring.coreos.com_prometheusrules.yaml",
}

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
DATA_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
# Kinds whose name must also be a DNS-1123 label (63 characters, no dots): they name DNS records or pods.
LABEL_NAMED = {"Service", "Deployment", "DaemonSet", "StatefulSet"}


def strict(schema):
    """The CRD schema with additionalProperties: false on every object that lists properties and neither
    preserves unknown fields nor says what else it takes."""
    if isinstance(schema, dict):
        out = {k: strict(v) for k, v in schema.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [strict(v) for v in schema]
    return schema


def load_crd_schemas(crd_dir):
    schemas = {}
    for (api_version, kind), name in CRD_FILES.items():
        path = os.path.join(crd_dir, name)
        with open(path) as f:
            crd = yaml.safe_load(f)
        version = api_version.split("/")[1]
        found = [v for v in crd["spec"]["versions"] if v["name"] == version]
        if not found:
            raise SystemExit(f"{path} has no version {version}")
        schema = strict(copy.deepcopy(found[0]["schema"]["openAPIV3Schema"]))
        schemas[(api_version, kind)] = jsonschema.Draft7Validator(schema)
    return schemas


def check_labels(where, labels, errors):
    for key, value in (labels or {}).items():
        prefix, _, name = key.rpartition("/")
        if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
            errors.append(f"{where}: label key {key!r}: bad prefix")
        if not name or len(name) > 63 or not LABEL_NAME.match(name):
            errors.append(f"{where}: label key {key!r} is not a valid label name")
        if not isinstance(value, str):
            errors.append(f"{where}: label {key!r} has a non-string value {value!r}")
        elif len(value) > 63 or not LABEL_VALUE.match(value):
            errors.append(f"{where}: label {key}={value!r} is not a valid label value (63 characters at most)")


def check_attribution(where, text, errors):
    """The sampler's attribution rules, as crates/sampler/src/attribution.rs reads them (deny_unknown_fields): a
    mistake here would stop every sampler at start (exit 2), so it fails the check instead."""
    if tomllib is None:
        print(f"NOTE {where}: attribution.toml not checked (needs Python 3.11's tomllib)")
        return
    try:
        cfg = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        errors.append(f"{where}: attribution.toml is not TOML: {e}")
        return

    def bad(msg):
        errors.append(f"{where}: attribution.toml: {msg}")

    top = {"idle_deployment", "default_model", "exporter_pods", "tenant", "deployment", "mig_slices"}
    for key in sorted(set(cfg) - top):
        bad(f"unknown key {key!r} (known: {', '.join(sorted(top))})")
    for key in ("idle_deployment", "default_model"):
        if key in cfg and not (isinstance(cfg[key], str) and 1 <= len(cfg[key]) <= 253):
            bad(f"{key} must be a string of 1 to 253 characters")
    if "exporter_pods" in cfg and not (
        isinstance(cfg["exporter_pods"], list) and all(isinstance(g, str) and g for g in cfg["exporter_pods"])
    ):
        bad("exporter_pods must be a list of globs")

    def is_uuid(v):
        try:
            uuid.UUID(str(v))
            return True
        except ValueError:
            return False

    for i, t in enumerate(cfg.get("tenant", [])):
        for key in sorted(set(t) - {"namespace", "tenant_id"}):
            bad(f"tenant[{i}]: unknown key {key!r}")
        if not isinstance(t.get("namespace"), str) or not t.get("namespace"):
            bad(f"tenant[{i}].namespace is required (a glob)")
        if not is_uuid(t.get("tenant_id")):
            bad(f"tenant[{i}].tenant_id must be a UUID")
    known = {"deployment_id", "pod", "namespace", "container", "labels", "tenant_id", "shared"}
    for i, d in enumerate(cfg.get("deployment", [])):
        for key in sorted(set(d) - known):
            bad(f"deployment[{i}]: unknown key {key!r}")
        if not isinstance(d.get("deployment_id"), str) or not 1 <= len(d.get("deployment_id", "")) <= 253:
            bad(f"deployment[{i}].deployment_id is required (1 to 253 characters)")
        if not any(d.get(k) for k in ("pod", "namespace", "container", "labels")):
            bad(f"deployment[{i}] matches nothing: give at least one of pod, namespace, container, labels")
        if "tenant_id" in d and not is_uuid(d["tenant_id"]):
            bad(f"deployment[{i}].tenant_id must be a UUID")
        if d.get("shared") and "tenant_id" in d:
            bad(f"deployment[{i}] is both shared and dedicated (tenant_id)")
    for model, n in (cfg.get("mig_slices") or {}).items():
        if not isinstance(n, int) or not 1 <= n <= 8:
            bad(f"mig_slices.{model!r} must be 1 to 8")


def pod_spec(doc):
    kind = doc.get("kind")
    if kind in ("Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job"):
        return doc.get("spec", {}).get("template", {}).get("spec")
    if kind == "CronJob":
        return doc.get("spec", {}).get("jobTemplate", {}).get("spec", {}).get("template", {}).get("spec")
    if kind == "Pod":
        return doc.get("spec")
    return None


def check_pod_security(where, spec, errors):
    pod_sc = spec.get("securityContext") or {}
    if spec.get("automountServiceAccountToken") is not False:
        errors.append(f"{where}: automountServiceAccountToken must be false")
    if (pod_sc.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
        errors.append(f"{where}: the pod's seccompProfile must be RuntimeDefault")
    containers = [("container", c) for c in spec.get("containers") or []]
    containers += [("initContainer", c) for c in spec.get("initContainers") or []]
    for what, c in containers:
        sc = c.get("securityContext") or {}
        cw = f"{where} {what} {c.get('name')}"
        if sc.get("allowPrivilegeEscalation") is not False:
            errors.append(f"{cw}: allowPrivilegeEscalation must be false")
        if sc.get("privileged"):
            errors.append(f"{cw}: privileged")
        if sc.get("readOnlyRootFilesystem") is not True:
            errors.append(f"{cw}: readOnlyRootFilesystem must be true")
        if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
            errors.append(f"{cw}: capabilities must drop ALL")
        added = set((sc.get("capabilities") or {}).get("add") or [])
        if what == "initContainer" and c.get("name") == "spool-owner":
            if not added <= {"CHOWN", "FOWNER"}:
                errors.append(f"{cw}: may add CHOWN and FOWNER only, adds {sorted(added)}")
            continue
        if added:
            errors.append(f"{cw}: adds capabilities {sorted(added)}")
        non_root = sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot"))
        uid = sc.get("runAsUser", pod_sc.get("runAsUser"))
        if non_root is not True or not isinstance(uid, int) or uid == 0:
            errors.append(f"{cw}: must run as non-root with a fixed non-zero uid (runAsNonRoot, runAsUser)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kube-version", required=True)
    ap.add_argument("--crd-dir", required=True)
    ap.add_argument("--alerts", help="files/alerts.yaml: the PrometheusRule must carry its groups unchanged")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()

    crds = load_crd_schemas(args.crd_dir)
    alerts = None
    if args.alerts:
        with open(args.alerts) as f:
            alerts = (yaml.safe_load(f) or {}).get("groups")

    failed = 0
    for path in args.files:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        errors, counts, seen = [], {}, set()
        for doc in docs:
            kind, api_version = doc.get("kind"), doc.get("apiVersion")
            meta = doc.get("metadata") or {}
            name = meta.get("name")
            where = f"{kind}/{name}"
            counts[kind] = counts.get(kind, 0) + 1
            if not kind or not api_version or not name:
                errors.append(f"a document lacks apiVersion, kind or metadata.name: {str(doc)[:200]}")
                continue
            if (kind, meta.get("namespace"), name) in seen:
                errors.append(f"{where}: two objects of this kind have this name")
            seen.add((kind, meta.get("namespace"), name))
            if len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
                errors.append(f"{where}: metadata.name is not a DNS-1123 subdomain")
            if kind in LABEL_NAMED and (len(name) > 63 or not DNS1123_LABEL.match(name)):
                errors.append(f"{where}: metadata.name must be a DNS-1123 label (63 characters, no dots)")
            check_labels(where, meta.get("labels"), errors)
            if kind == "ConfigMap" and "attribution.toml" in (doc.get("data") or {}):
                check_attribution(where, doc["data"]["attribution.toml"], errors)
            if kind in ("ConfigMap", "Secret"):
                for field in ("data", "stringData", "binaryData"):
                    for key in doc.get(field) or {}:
                        if len(key) > 253 or not DATA_KEY.match(key):
                            errors.append(f"{where}: {field} key {key!r} is not a valid key ([-._a-zA-Z0-9]+)")
            spec = pod_spec(doc)
            if spec is not None:
                template = (doc.get("spec") or {}).get("template") or {}
                check_labels(f"{where} pod template", (template.get("metadata") or {}).get("labels"), errors)
                check_pod_security(where, spec, errors)

            crd = crds.get((api_version, kind))
            if crd is not None:
                for e in sorted(crd.iter_errors(doc), key=lambda e: list(e.path)):
                    loc = ".".join(str(p) for p in e.path)
                    errors.append(f"{where}: {loc}: {e.message} (CRD schema, prometheus-operator)")
                if kind == "PrometheusRule" and alerts is not None and doc["spec"].get("groups") != alerts:
                    errors.append(f"{where}: spec.groups differ from files/alerts.yaml's groups")
                continue
            try:
                kv.validate(doc, args.kube_version, strict=True)
            except kv.ValidationError as e:
                loc = ".".join(str(p) for p in e.path)
                errors.append(f"{where}: {loc}: {e.message} (Kubernetes {e.version}, strict)")
            except kv.SchemaNotFoundError as e:
                errors.append(f"{where}: {e.message}: not a Kubernetes kind and not a CRD this check knows")
            except kv.VersionNotSupportedError:
                raise SystemExit(f"kubernetes-validate does not support Kubernetes {args.kube_version}")

        summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        if errors:
            failed += 1
            print(f"FAIL {path}: {len(errors)} problem(s) in {len(docs)} objects")
            for e in errors:
                print(f"  - {e}")
        else:
            print(f"ok   {path}: {len(docs)} objects valid ({summary})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
