# shellcheck shell=bash
# Helpers of the container suite: a private Docker Engine (Debian's docker.io: its data root
# under build/containers; its socket and exec root, where containerd puts its sockets, in a short
# directory of its own under /run), locally made base and app images, ok/FAIL lines in
# tests/e2e/lib.sh's style. Nothing here talks to an image registry or leaves loopback.

set -u
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../suite.sh
. "$ROOT/tests/suite.sh"
# shellcheck source=../../scripts/apt-sources.sh
. "$ROOT/scripts/apt-sources.sh"
case $BUILD in /*) ABS_BUILD=$BUILD ;; *) ABS_BUILD=$ROOT/$BUILD ;; esac
# One engine state and image cache per checkout, whatever $BUILD (SAN=1 uses build/san).
CT=$ROOT/build/containers
mkdir -p "$CT"
# Debian's engine, never whatever `docker` is first on PATH (a CLI of another version may be).
DOCKER_BIN=${DOCKER_BIN:-/usr/bin/docker}
DOCKERD_BIN=${DOCKERD_BIN:-/usr/sbin/dockerd}
CRUN_BIN=${CRUN_BIN:-/usr/bin/crun}
# Set by start_dockerd: the engine's socket is in its run directory (ENGINE_RUN).
export DOCKER_HOST=
# The CLI keeps its config (auth, contexts) here, not in ~/.docker.
export DOCKER_CONFIG=$CT/cli
# The classic builder: BuildKit would fetch the "# syntax=" frontend image from a registry.
export DOCKER_BUILDKIT=0
mkdir -p "$DOCKER_CONFIG"
PASSED=0
FAILED=0

ok() { echo "ok $1"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL $1: $2"; FAILED=$((FAILED + 1)); }
note() { echo "# $*"; }
# Timed call of the private engine: nothing may hang the suite. Never the host's engine, which an
# empty DOCKER_HOST would reach.
dk() {
    [ -n "$DOCKER_HOST" ] || { echo "dk: no engine started (start_dockerd)" >&2; return 1; }
    timeout "${DK_TIMEOUT:-120}" "$DOCKER_BIN" "$@"
}

DOCKERD_PID=
# The engine's state directory (data root, pidfile, daemon.json, log): the container suite's own
# by default. tests/cluster/ runs a second engine for its kubelet with ENGINE_DIR pointing
# elsewhere and its own ENGINE_CONFIG (daemon.json).
ENGINE_DIR=${ENGINE_DIR:-$CT}
ENGINE_CONFIG=${ENGINE_CONFIG:-}
# The engine's run directory: its socket and its exec root, where containerd binds
# exec/containerd/containerd.sock.ttrpc. A socket's path may have at most 107 bytes, so it is a
# short directory under /run (short_run_dir), never under the checkout; $ENGINE_DIR/run-dir
# names it for a later run, which reuses the engine while it answers.
ENGINE_RUN=

# unmount_under DIR: what is mounted under DIR, deepest first (dockerd leaves its default network
# namespace bind-mounted in the exec root, and a killed one may leave overlays).
unmount_under() {
    local m
    awk -v d="$1/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r |
        while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
}

# start_dockerd: reuses our own engine when its socket answers, else starts one whose pid is
# remembered so stop_dockerd ends it (and only it). Sets and exports DOCKER_HOST.
start_dockerd() {
    local ed=$ENGINE_DIR rd
    rd=$(cat "$ed/run-dir" 2>/dev/null)
    case $rd in /run/clrattach-engine.* | /tmp/clrattach-engine.*) ;; *) rd= ;; esac
    if [ -n "$rd" ]; then
        export DOCKER_HOST=unix://$rd/docker.sock
        if [ -S "$rd/docker.sock" ] && dk version >/dev/null 2>&1; then
            note "reusing the engine at $DOCKER_HOST"
            return 0
        fi
        # A killed run's: nothing answers there any more.
        remove_run_dir "$rd"
        rm -f "$ed/run-dir"
    fi
    [ -x "$DOCKERD_BIN" ] && [ -x "$DOCKER_BIN" ] ||
        { echo "docker.io is not installed (scripts/install-deps.sh)"; return 1; }
    [ "$(id -u)" -eq 0 ] || { echo "the container suite needs root (dockerd)"; return 1; }
    mkdir -p "$ed"
    rm -f "$ed/dockerd.pid"
    rd=$(short_run_dir engine) || { echo "no directory for the engine's sockets under /run or /tmp"; return 1; }
    # The deepest socket the engine makes: say so now rather than time out on it.
    sock_path_fits "$rd/exec/containerd/containerd.sock.ttrpc" "containerd's socket" ||
        { remove_run_dir "$rd"; return 1; }
    ENGINE_RUN=$rd
    echo "$rd" >"$ed/run-dir"
    export DOCKER_HOST=unix://$rd/docker.sock
    # Its own daemon.json (the host's /etc/docker/daemon.json is not ours to read), with crun
    # as a second runtime. crun refuses a cgroup v1 host whose v2 hierarchy (mounted at
    # /sys/fs/cgroup/unified: "hybrid") has controllers, whatever its --cgroup-manager; there it
    # runs through a wrapper that unmounts that hierarchy in a private mount namespace of its
    # own, so crun sees a plain cgroup v1 host. Nothing changes for anyone else.
    local crun=$CRUN_BIN
    if [ -x "$CRUN_BIN" ] && grep -q . /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null; then
        crun=$CT/crun-v1
        printf '%s\n' '#!/bin/sh' \
            "exec unshare --mount --propagation private /bin/sh -c \\" \
            "    'umount -l /sys/fs/cgroup/unified 2>/dev/null; exec \"\$0\" \"\$@\"' \\" \
            "    $CRUN_BIN \"\$@\"" >"$crun"
        chmod 755 "$crun"
    fi
    if [ -n "$ENGINE_CONFIG" ]; then
        printf '%s\n' "$ENGINE_CONFIG" >"$ed/daemon.json"
    elif [ -x "$CRUN_BIN" ]; then
        printf '{"runtimes": {"crun": {"path": "%s"}}}\n' "$crun" >"$ed/daemon.json"
    else
        echo '{}' >"$ed/daemon.json"
    fi
    # No bridge, no iptables rules, no NAT: containers get --network none or host only.
    # Its own containerd (no --containerd): state under the exec root, gone with the daemon.
    "$DOCKERD_BIN" -H "$DOCKER_HOST" --data-root "$ed/data" --exec-root "$rd/exec" \
        --pidfile "$ed/dockerd.pid" --bridge=none --iptables=false --ip6tables=false \
        --ip-masq=false --userland-proxy=false --storage-driver=overlay2 \
        --config-file "$ed/daemon.json" >"$ed/dockerd.log" 2>&1 &
    DOCKERD_PID=$!
    local i
    for i in $(seq 120); do
        dk version >/dev/null 2>&1 && return 0
        kill -0 "$DOCKERD_PID" 2>/dev/null || break
        sleep 0.5
    done
    echo "dockerd did not start: $(tail -5 "$ed/dockerd.log")"
    return 1
}

stop_dockerd() {
    [ -n "$DOCKERD_PID" ] || return 0
    kill -TERM "$DOCKERD_PID" 2>/dev/null
    local i
    for i in $(seq 60); do
        kill -0 "$DOCKERD_PID" 2>/dev/null || break
        sleep 0.5
    done
    kill -KILL "$DOCKERD_PID" 2>/dev/null
    wait "$DOCKERD_PID" 2>/dev/null
    DOCKERD_PID=
    # What is left mounted under our own directories, so `make clean` can remove the state and
    # the run directory goes with the engine.
    unmount_under "$ENGINE_DIR"
    if [ -n "$ENGINE_RUN" ]; then
        remove_run_dir "$ENGINE_RUN"
        rm -f "$ENGINE_DIR/run-dir"
        ENGINE_RUN=
    fi
}

# The Debian mirror apt uses, for debootstrap (scripts/apt-sources.sh); empty when none.
debian_mirror() {
    apt_debian_mirror
}

# image_present TAG HASH: the tag exists and carries our input hash label.
image_present() {
    local f='{{index .Config.Labels "dev.clrattach.test.inputs"}}'
    [ "$(dk image inspect -f "$f" "$1" 2>/dev/null)" = "$2" ]
}

# make_base_image: debian:bookworm from debootstrap --variant=minbase, the Dockerfile's FROM.
# The root tarball is cached under $CT keyed by mirror and suite; the image by that hash.
make_base_image() {
    local mirror key tar dir
    mirror=$(debian_mirror)
    [ -n "$mirror" ] || { echo "apt names no Debian mirror for debootstrap (apt-get update?)"; return 1; }
    key=$(printf 'minbase bookworm %s v1\n' "$mirror" | sha256sum | cut -c1-16)
    tar=$CT/debian-bookworm-$key.tar
    image_present debian:bookworm "$key" && return 0
    if [ ! -s "$tar" ]; then
        command -v debootstrap >/dev/null || { echo "debootstrap is not installed"; return 1; }
        dir=$CT/rootfs.tmp
        rm -rf "$dir"
        timeout 900 debootstrap --variant=minbase bookworm "$dir" "$mirror" \
            >"$CT/debootstrap.log" 2>&1 ||
            { echo "debootstrap failed: $(tail -3 "$CT/debootstrap.log")"; rm -rf "$dir"
              return 1; }
        rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
        tar -C "$dir" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar" && rm -rf "$dir"
    fi
    DK_TIMEOUT=300 dk import -c "LABEL dev.clrattach.test.inputs=$key" -c 'CMD ["/bin/bash"]' \
        "$tar" debian:bookworm >/dev/null
}

# The .NET runtime folder (the SDK's own shared/Microsoft.NETCore.App lives in it).
dotnet_root() {
    dotnet --list-runtimes 2>/dev/null |
        sed -n 's|^Microsoft.NETCore.App [^ ]* \[\(.*\)/shared/Microsoft.NETCore.App\]$|\1|p' |
        head -1
}

# make_app_image: clrattach-test/app: the base image + the dotnet folder without the SDK parts
# + the test app, as uid 1000. Keyed by the runtime's file list, the test app and the base.
make_app_image() {
    local droot ctx key
    droot=$(dotnet_root)
    [ -n "$droot" ] && [ -d "$droot/shared" ] ||
        { echo "no .NET runtime found (dotnet --list-runtimes)"; return 1; }
    [ -s "$ABS_BUILD/target/ClrTarget.dll" ] ||
        { echo "$BUILD/target/ClrTarget.dll missing (make target)"; return 1; }
    key=$( {
        dk image inspect -f '{{.Id}}' debian:bookworm
        (cd "$droot" && find dotnet host shared -printf '%p %s %T@\n' | sort)
        sha256sum "$ABS_BUILD"/target/ClrTarget.* | awk '{print $1}'
        sed -n '/^app_dockerfile()/,/^}/p' "${BASH_SOURCE[0]}"
    } | sha256sum | cut -c1-16)
    image_present clrattach-test/app "$key" && return 0
    ctx=$CT/app-ctx
    rm -rf "$ctx"
    mkdir -p "$ctx/dotnet" "$ctx/app"
    cp -a "$droot/dotnet" "$droot/host" "$droot/shared" "$ctx/dotnet/"
    # The test app only needs the base runtime.
    rm -rf "$ctx/dotnet/shared/Microsoft.AspNetCore.App"
    cp -a "$ABS_BUILD"/target/ClrTarget.* "$ctx/app/"
    app_dockerfile "$key" >"$ctx/Dockerfile"
    DK_TIMEOUT=600 dk build --network none -q -t clrattach-test/app "$ctx" \
        >"$CT/app-build.log" 2>&1 ||
        { echo "app image build failed: $(tail -5 "$CT/app-build.log")"; return 1; }
    rm -rf "$ctx"
}

app_dockerfile() {
    cat <<EOF
FROM debian:bookworm
COPY dotnet /usr/share/dotnet
COPY app /app
ENV DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1 DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 HOME=/tmp
LABEL dev.clrattach.test.inputs=$1
USER 1654:1654
ENTRYPOINT ["/usr/share/dotnet/dotnet", "/app/ClrTarget.dll"]
EOF
}

# make_clrattach_image: the project's Dockerfile, unchanged; docker's build cache makes a rerun
# quick. The build reaches the Debian mirror (apt-get in the builder stage): --network host.
make_clrattach_image() {
    local rev
    rev=$(git -C "$ROOT" describe --always --dirty --abbrev=40 --exclude='*' 2>/dev/null || echo unknown)
    DK_TIMEOUT=1500 dk build --network host --build-arg REVISION="$rev" -t clrattach-test/clrattach "$ROOT" \
        >"$CT/clrattach-build.log" 2>&1 ||
        { echo "docker build failed: $(tail -8 "$CT/clrattach-build.log")"; return 1; }
}
