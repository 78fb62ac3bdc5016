#!/usr/bin/env bash
# Build the container image from the unchanged Dockerfile with a real OCI builder (buildah),
# then run what it built the way the Kubernetes Job runs it, as user 65532, and reconcile
# every count with the reference hub's /stats. Used by .ci/run.
#
#   bash scripts/image-check.sh          # as root, on Debian bookworm
#
# No container registry is needed: the two base images the Dockerfile names are assembled
# locally (debootstrap) and tagged with the names its FROM lines resolve to, so buildah uses
# them without pulling. They are kept in buildah's store, so a second run reuses them.
# Elsewhere, people pull the real bases; nothing here changes the Dockerfile.
#
# Environment: IMAGE (default hubload:ci), DEBIAN_MIRROR (default http://deb.debian.org/debian),
# SSL_CERT_FILE (when set, mounted over the build's CA bundle so cargo can fetch crates
# through a TLS proxy; never copied into the image).
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${IMAGE:-hubload:ci}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# What the Dockerfile's FROM lines resolve to (a short name expands to Docker Hub's library).
BUILDER_BASE=docker.io/library/rust:1-bookworm
RUNTIME_BASE=gcr.io/distroless/cc-debian12:nonroot
PROFILES_DIR=/etc/hubload/profiles # where the Dockerfile puts profiles/ and the docs say they are
NONROOT=65532
ISO=(--isolation chroot)
export BUILDAH_ISOLATION=chroot

work="$(mktemp -d /var/tmp/image-check.XXXXXX)"
containers=() # buildah working containers to remove on exit
hub_pids=()   # background hubs to stop on exit
timings=()

cleanup() {
    local rc=$?
    for pid in "${hub_pids[@]}"; do stop_hub "$pid"; done
    for c in "${containers[@]}"; do buildah rm "$c" >/dev/null 2>&1 || true; done
    rm -rf "$work"
    if [ "${#timings[@]}" -gt 0 ]; then
        echo "== image-check times"
        printf '   %s\n' "${timings[@]}"
    fi
    [ "$rc" -eq 0 ] && echo "image-check: OK" || echo "image-check: FAILED (exit $rc)" >&2
    exit "$rc"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# step NAME CMD...: run CMD, record how long it took.
step() {
    local name=$1 start=$SECONDS
    shift
    echo "== $name"
    "$@"
    timings+=("$(printf '%-44s %5d s' "$name" $((SECONDS - start)))")
}

# ---------------------------------------------------------------------------- tools

install_tools() {
    [ "$(id -u)" -eq 0 ] || fail "needs root (buildah with chroot isolation, debootstrap)"
    local missing=()
    command -v buildah >/dev/null || missing+=(buildah)
    command -v debootstrap >/dev/null || missing+=(debootstrap)
    command -v readelf >/dev/null || missing+=(binutils)
    command -v curl >/dev/null || missing+=(curl)
    command -v python3 >/dev/null || missing+=(python3)
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    command -v rustc >/dev/null || fail "rustc not on PATH: the builder image is made from this machine's toolchain"
    buildah --version
}

# ---------------------------------------------------------------------------- base images

have_image() { buildah inspect --type image "$1" >/dev/null 2>&1; }

label() { # image, key
    buildah inspect --type image --format "{{index .OCIv1.Config.Labels \"$2\"}}" "$1" 2>/dev/null
}

# new_rootfs VAR PACKAGES: a scratch working container with a Debian bookworm minbase file
# system (plus PACKAGES, comma-separated) in it; its mount point goes into VAR.
new_rootfs() {
    local -n mnt_out=$1
    local ctr
    ctr=$(buildah from scratch)
    containers+=("$ctr")
    mnt_out=$(buildah mount "$ctr")
    mkdir -p "$work/debs"
    debootstrap --variant=minbase --include="$2" --cache-dir="$work/debs" \
        bookworm "$mnt_out" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
        || { tail -20 "$work/debootstrap.log" >&2; fail "debootstrap $2"; }
    rm -rf "$mnt_out"/var/lib/apt/lists/* "$mnt_out"/var/cache/apt/*.bin "$mnt_out"/var/cache/apt/archives/*.deb
    last_ctr=$ctr
}

commit() { # container, name, buildah-config args...
    local ctr=$1 name=$2
    shift 2
    buildah umount "$ctr" >/dev/null
    buildah config --label "org.opencontainers.image.description=local stand-in for $name, made by scripts/image-check.sh" "$@" "$ctr"
    buildah commit --quiet --rm "$ctr" "$name" >/dev/null
    containers=("${containers[@]/$ctr/}")
}

# The builder: bookworm + a C toolchain + this machine's Rust toolchain (Debian's rustc is too
# old for the workspace). Rebuilt when the machine's rustc changes.
builder_base() {
    local want
    want="$(rustc --version)"
    if have_image "$BUILDER_BASE" && [ "$(label "$BUILDER_BASE" hubload.rustc)" = "$want" ]; then
        echo "reusing $BUILDER_BASE ($want)"
        return
    fi
    local mnt sysroot d
    new_rootfs mnt gcc,libc6-dev,ca-certificates
    sysroot="$(rustc --print sysroot)"
    mkdir -p "$mnt/usr/local/rust" "$mnt/usr/local/cargo"
    for d in bin lib libexec etc; do
        [ -d "$sysroot/$d" ] && cp -a "$sysroot/$d" "$mnt/usr/local/rust/"
    done
    commit "$last_ctr" "$BUILDER_BASE" \
        --env PATH=/usr/local/cargo/bin:/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        --env CARGO_HOME=/usr/local/cargo \
        --label "hubload.rustc=$want" \
        --cmd /bin/bash
    echo "made $BUILDER_BASE ($want)"
}

# The runtime, standing in for distroless/cc: glibc, libgcc, libstdc++, libssl, CA
# certificates, tzdata, and the user and group 65532 "nonroot" with its home.
runtime_base() {
    if have_image "$RUNTIME_BASE"; then
        echo "reusing $RUNTIME_BASE"
        return
    fi
    local mnt
    new_rootfs mnt ca-certificates,libssl3,libstdc++6,libgomp1,tzdata
    echo "nonroot:x:$NONROOT:$NONROOT:nonroot:/home/nonroot:/sbin/nologin" >>"$mnt/etc/passwd"
    echo "nonroot:x:$NONROOT:" >>"$mnt/etc/group"
    install -d -m 0700 -o "$NONROOT" -g "$NONROOT" "$mnt/home/nonroot"
    commit "$last_ctr" "$RUNTIME_BASE" \
        --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
        --user "$NONROOT:$NONROOT" --workingdir /home/nonroot
    echo "made $RUNTIME_BASE"
}

# ---------------------------------------------------------------------------- the build

# The context buildah really sends (it honours .dockerignore) must be the one
# scripts/context-check.py computes with Docker's rules: this proves that check's matcher
# against a real builder's.
context_cross_check() {
    printf 'FROM scratch\nCOPY . /ctx\n' >"$work/Containerfile.ctx"
    buildah bud "${ISO[@]}" --pull=never --quiet -f "$work/Containerfile.ctx" -t hubload-context:ci . >/dev/null
    local ctr mnt
    ctr=$(buildah from --pull=never hubload-context:ci)
    containers+=("$ctr")
    mnt=$(buildah mount "$ctr")
    (cd "$mnt/ctx" && find . -type f -printf '%P\n' | sort) >"$work/context.buildah"
    python3 scripts/context-check.py --list | sort >"$work/context.ours"
    buildah rm "$ctr" >/dev/null
    buildah rmi hubload-context:ci >/dev/null
    diff -u "$work/context.ours" "$work/context.buildah" \
        || fail "scripts/context-check.py and buildah disagree on the build context (- ours, + buildah)"
    echo "buildah's context = context-check.py's context ($(wc -l <"$work/context.ours") files)"
}

build_image() {
    local vol=()
    if [ -n "${SSL_CERT_FILE:-}" ] && [ -f "$SSL_CERT_FILE" ]; then
        vol=(-v "$SSL_CERT_FILE:/etc/ssl/certs/ca-certificates.crt:ro")
    fi
    buildah bud "${ISO[@]}" --pull=never --layers "${vol[@]}" -t "$IMAGE" . >"$work/build.log" 2>&1 \
        || { tail -40 "$work/build.log" >&2; fail "buildah bud"; }
    tail -3 "$work/build.log"
}

# layers IMAGE: "digest size" of each layer (uncompressed tars in buildah's store).
layers() {
    buildah inspect --type image "$1" | python3 -c 'import json, sys
for l in json.loads(json.load(sys.stdin)["Manifest"])["layers"]:
    print(l["digest"], l["size"])'
}

# The image's own facts: user, entrypoint, stripped binaries, profiles, size on top of the base.
inspect_image() {
    local user entry
    user=$(buildah inspect --type image --format '{{.OCIv1.Config.User}}' "$IMAGE")
    entry=$(buildah inspect --type image --format '{{.OCIv1.Config.Entrypoint}}' "$IMAGE")
    [ "$user" = "$NONROOT:$NONROOT" ] || fail "image user is '$user', want $NONROOT:$NONROOT"
    [ "$entry" = '[hubload]' ] || fail "image entrypoint is $entry, want [hubload]"
    local ctr mnt b
    ctr=$(buildah from --pull=never "$IMAGE")
    containers+=("$ctr")
    mnt=$(buildah mount "$ctr")
    for b in hubload hubload-hub; do
        [ -x "$mnt/usr/local/bin/$b" ] || fail "/usr/local/bin/$b missing from the image"
        if readelf -S "$mnt/usr/local/bin/$b" | grep -q '\.symtab'; then fail "$b is not stripped"; fi
    done
    diff -r profiles "$mnt$PROFILES_DIR" || fail "$PROFILES_DIR in the image differs from profiles/"
    grep -q "$PROFILES_DIR" deploy/k8s/README.md || fail "deploy/k8s/README.md does not name $PROFILES_DIR"
    local added
    layers "$RUNTIME_BASE" >"$work/layers.base"
    layers "$IMAGE" >"$work/layers.image"
    grep -qxFf "$work/layers.base" "$work/layers.image" || fail "$IMAGE is not built on $RUNTIME_BASE"
    added=$(grep -vxFf "$work/layers.base" "$work/layers.image" | awk '{n += $2} END {print n + 0}')
    printf 'image %s: user %s, entrypoint %s, binaries stripped: hubload %s B, hubload-hub %s B\n' \
        "$IMAGE" "$user" "$entry" "$(stat -c %s "$mnt/usr/local/bin/hubload")" "$(stat -c %s "$mnt/usr/local/bin/hubload-hub")"
    printf 'size on top of the runtime base: %s B (%s MB) in %s layers\n' \
        "$added" $((added / 1000000)) "$(grep -vcxFf "$work/layers.base" "$work/layers.image")"
    [ "$added" -lt 60000000 ] || fail "the image adds $added B on top of the runtime base; the bound is 60 MB"
    buildah rm "$ctr" >/dev/null
}

# ---------------------------------------------------------------------------- running it

# A working container of the image, for running its programs.
new_container() {
    local -n ctr_out=$1
    ctr_out=$(buildah from --pull=never "$IMAGE")
    containers+=("$ctr_out")
}

# in_image CONTAINER [buildah-run options] -- CMD...: run CMD from the image as 65532, host network.
in_image() {
    local ctr=$1 opts=()
    shift
    while [ "$1" != -- ]; do
        opts+=("$1")
        shift
    done
    buildah run "${ISO[@]}" --network host --user "$NONROOT:$NONROOT" "${opts[@]}" "$ctr" "$@"
}

# A directory the image's user can write, mounted as the Job's /out.
out_dir() {
    local d="$work/$1"
    install -d -o "$NONROOT" -g "$NONROOT" "$d"
    echo "$d"
}

# start_hub VAR [hub flags]: hubload-hub from the image on 127.0.0.1, a port the kernel picks;
# its URL goes into VAR once /stats answers.
start_hub() {
    local -n url_out=$1
    shift
    local ctr log port="" i
    new_container ctr
    log="$work/hub-$ctr.log"
    in_image "$ctr" -- hubload-hub --listen 127.0.0.1:0 "$@" >"$log" 2>&1 &
    hub_pids+=("$!")
    for i in $(seq 1 300); do
        port=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -o 'listening addr=127\.0\.0\.1:[0-9]*' | head -1 | cut -d: -f2 || true)
        [ -n "$port" ] && curl -fsS "http://127.0.0.1:$port/stats" >/dev/null 2>&1 && break
        kill -0 "${hub_pids[-1]}" 2>/dev/null || { cat "$log" >&2; fail "hubload-hub from the image exited"; }
        port=""
        sleep 0.2
    done
    [ -n "$port" ] || { cat "$log" >&2; fail "hubload-hub from the image did not answer /stats within 60 s"; }
    url_out="http://127.0.0.1:$port"
    echo "hubload-hub from the image at $url_out (buildah pid ${hub_pids[-1]})"
}

# stop_hub PID: SIGTERM to the hub (buildah's child) and to buildah, then wait.
stop_hub() {
    local pid=$1 child
    for child in $(pgrep -P "$pid" 2>/dev/null); do kill -TERM "$child" 2>/dev/null || true; done
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

stats() { curl -fsS "$1/stats" >"$2" || fail "GET $1/stats"; }

reconcile() { # what, summary.json, stats-before, stats-after
    python3 scripts/image-reconcile.py "$@" || fail "$1: hubload's counts differ from the hub's /stats"
}

check_cli() {
    local ctr version want
    new_container ctr
    version=$(in_image "$ctr" -- hubload --version)
    want="hubload $(python3 -c 'import tomllib; print(tomllib.load(open("Cargo.toml", "rb"))["workspace"]["package"]["version"])')"
    [ "$version" = "$want" ] || fail "hubload --version from the image printed '$version', want '$want'"
    in_image "$ctr" -- hubload --help >"$work/help.txt" || fail "hubload --help from the image"
    grep -q -- '--hub-url' "$work/help.txt" || fail "hubload --help from the image does not list --hub-url"
    in_image "$ctr" -- hubload-hub --version >/dev/null || fail "hubload-hub --version from the image"
    echo "$version; --help lists $(grep -c -- '--' "$work/help.txt") options"
}

# A sweep against a fault-injecting hub: every class count equals the hub's.
check_sweep() {
    local hub ctr out
    start_hub hub --fail-502-every 5 --fail-503-every 7
    new_container ctr
    out=$(out_dir sweep)
    stats "$hub" "$work/sweep-before.json"
    in_image "$ctr" -v "$out:/out" -- hubload --hub-url "$hub/hub" --tenants 5 --topics shared \
        --concurrency 1,4,8 --requests 70 --out /out --quiet || fail "the sweep from the image"
    stats "$hub" "$work/sweep-after.json"
    reconcile sweep "$out/summary.json" "$work/sweep-before.json" "$work/sweep-after.json" --levels 3 --requests 70 --nonzero http_502,http_503
}

# The Indexed Job: 2 shards with the shard environment and the Job's args (the ConfigMap
# profile mounted at /etc/hubload/profile.toml, reports to /out), merged from their logs.
check_shards() {
    local hub start i ctr out
    start_hub hub
    stats "$hub" "$work/shards-before.json"
    # Far enough ahead for both containers to start on a loaded machine, as in the Job.
    start=$(date -u -d '+20 sec' +%Y-%m-%dT%H:%M:%SZ)
    local pids=()
    for i in 0 1; do
        new_container ctr
        out=$(out_dir "shard$i")
        in_image "$ctr" -v "$out:/out" -v "$PWD/deploy/k8s/base/profile.toml:/etc/hubload/profile.toml:ro" \
            -e JOB_COMPLETION_INDEX="$i" -e HUBLOAD_SHARD_COUNT=2 -e HUBLOAD_RUN_ID=image-check \
            -e HUBLOAD_START_AT="$start" \
            -- hubload --profile /etc/hubload/profile.toml --out /out \
            --hub-url "$hub/hub" --client default --warmup 0s --concurrency 2,5 --requests 101 \
            >"$work/shard$i.log" 2>&1 &
        pids+=("$!")
    done
    for i in 0 1; do
        wait "${pids[$i]}" || { cat "$work/shard$i.log" >&2; fail "shard $i from the image"; }
    done
    stats "$hub" "$work/shards-after.json"
    for i in 0 1; do
        [ -f "$work/shard$i/shard-$i-of-2.jsonl" ] || fail "shard $i did not write /out/shard-$i-of-2.jsonl"
    done
    # As `kubectl logs … > shards.log` would collect them.
    cat "$work/shard0.log" "$work/shard1.log" >"$work/shards.log"
    new_container ctr
    out=$(out_dir merged)
    in_image "$ctr" -v "$out:/out" -v "$work/shards.log:/in/shards.log:ro" \
        -- hubload merge /in/shards.log --out /out >"$work/merge.log" 2>&1 \
        || { cat "$work/merge.log" >&2; fail "hubload merge from the image"; }
    reconcile "2 shards merged" "$out/summary.json" "$work/shards-before.json" "$work/shards-after.json" --levels 2 --requests 101
    # The record files merge to the same counts as the log lines.
    local out2
    out2=$(out_dir merged-files)
    in_image "$ctr" -v "$out2:/out" -v "$work/shard0:/in/0:ro" -v "$work/shard1:/in/1:ro" \
        -- hubload merge /in/0 /in/1 --out /out >/dev/null 2>&1 || fail "hubload merge of the shard files"
    reconcile "2 shard files merged" "$out2/summary.json" "$work/shards-before.json" "$work/shards-after.json" --levels 2 --requests 101
    HUB_FOR_PROFILE=$hub
}

# A shipped profile, from where the image keeps them.
check_profile() {
    local hub=$HUB_FOR_PROFILE ctr out
    new_container ctr
    out=$(out_dir smoke)
    stats "$hub" "$work/smoke-before.json"
    in_image "$ctr" -v "$out:/out" -- hubload --profile "$PROFILES_DIR/smoke.toml" --hub-url "$hub/hub" \
        --warmup 0s --requests 40 --out /out --quiet || fail "$PROFILES_DIR/smoke.toml from the image"
    stats "$hub" "$work/smoke-after.json"
    reconcile "profile smoke.toml" "$out/summary.json" "$work/smoke-before.json" "$work/smoke-after.json" --levels 2 --requests 40
}

main() {
    step "tools" install_tools
    step "builder base ($BUILDER_BASE)" builder_base
    step "runtime base ($RUNTIME_BASE)" runtime_base
    step "build context = context-check.py's" context_cross_check
    step "buildah bud -t $IMAGE ." build_image
    step "image: user, entrypoint, stripped, size" inspect_image
    step "hubload --version / --help" check_cli
    step "sweep from the image vs hub /stats" check_sweep
    step "2 shards + merge vs hub /stats" check_shards
    step "profile $PROFILES_DIR/smoke.toml" check_profile
    timings+=("$(printf '%-44s %5d s' total "$SECONDS")")
}

main "$@"; exit
