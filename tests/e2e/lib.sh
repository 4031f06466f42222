# shellcheck shell=bash
# Helpers for the end-to-end tests: start the C# target in its own "container" (a private mount
# namespace with its own tmpfs /tmp, optionally its own PID namespace with its own /proc, another
# uid, a custom TMPDIR), run clrattach against it, and check what happened inside.

set -u
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../suite.sh
. "$ROOT/tests/suite.sh"
CLRATTACH="$ROOT/$BUILD/clrattach"
PROBE="$ROOT/$BUILD/libclrprobe.so"
TARGET_DLL="$ROOT/$BUILD/target/ClrTarget.dll"
# The host's architecture as the runtime names it (RID) and as Debian's multiarch directories do:
# the suite runs natively on x86_64 and arm64 hosts alike.
case $(uname -m) in
aarch64) RID_ARCH=arm64 MULTIARCH=aarch64-linux-gnu ;;
*) RID_ARCH=x64 MULTIARCH=x86_64-linux-gnu ;;
esac
HOST_RID=linux-$RID_ARCH
PROBE_CLSID=$(sed -n 's/^#define CLRPROBE_CLSID[[:space:]]*"\(.*\)"/\1/p' "$ROOT/profiler/clrprobe.h")
# The vendor-shaped test profiler (make vendorprof): a directory, its library needing a helper
# library beside it (RUNPATH $ORIGIN). require_vendorinert NAME fails the test file without it.
VI="$ROOT/$BUILD/vendorinert"
VI_LIB=OpenTelemetry.AutoInstrumentation.Native.so
VI_CLSID="{918728DD-259F-4A6A-AC2B-B85E1B658318}"
require_vendorinert() {
    [ -e "$VI/$VI_LIB" ] || { echo "FAIL $1-prerequisites: $VI/$VI_LIB missing (make vendorprof)"; exit 1; }
}
# vp_report PID PATH: the vendor profiler's report in the target (JSON), waited for briefly.
vp_report() {
    local i
    for i in $(seq 1 50); do
        [ -s "/proc/$1/root$2" ] && { cat "/proc/$1/root$2"; return 0; }
        sleep 0.1
    done
    return 1
}
# Outside /tmp: every target mounts its own tmpfs over /tmp, and --pre commands read from here.
mkdir -p "$ROOT/$BUILD"
WORK=$(mktemp -d "$ROOT/$BUILD/e2e.XXXXXX")
# Under `make SAN=1`, LeakSanitizer's scan at exit needs ptrace, getdents and open on /proc,
# which the binary's own seccomp filter forbids by design (it would die with SIGSYS after a
# correct run). The binary's leaks are checked under valgrind instead (tests/e2e/test_valgrind.sh);
# every other ASan and UBSan check stays on.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
PASSED=0
FAILED=0
TARGET_PIDS=()

# make_sock_dir: sets SOCK_DIR, a short directory (0711) for the sockets a test binds and what is
# delivered beside them, under /run (the same in every namespace here; each mounts its own
# /tmp): a Unix socket's path may have at most 107 bytes, and $WORK's depth is the checkout's.
# Removed with $WORK.
SOCK_DIR=
make_sock_dir() {
    [ -n "$SOCK_DIR" ] && return 0
    SOCK_DIR=$(short_run_dir e2e exec) || { echo "FAIL e2e-prerequisites: no directory under /run"; exit 1; }
    chmod 0711 "$SOCK_DIR"
}

# require_sock_path NAME PATH WHAT: the test binds a socket at PATH; one too long for sun_path
# fails the test at once, naming the path, its length and the limit (not a timeout later).
require_sock_path() {
    local msg
    msg=$(sock_path_fits "$2" "$3") || { echo "FAIL $1-prerequisites: $msg"; exit 1; }
}

cleanup_targets() {
    local p
    for p in "${TARGET_PIDS[@]}"; do
        kill -KILL "$p" 2>/dev/null
    done
    wait 2>/dev/null
    if [ -n "${KEEP_WORK:-}" ]; then
        echo "kept $WORK $SOCK_DIR" >&2
    else
        rm -rf "$WORK"
        remove_run_dir "$SOCK_DIR"
    fi
}
trap cleanup_targets EXIT

# Inside a target's namespace the repository is bind-mounted at /srv: a checkout under /tmp
# (CI clones anywhere) would otherwise vanish under the target's private tmpfs. NS_PROLOGUE runs
# first in every namespace; ns_path maps a path of ours to the namespace's view.
NS_ROOT=/srv
[ -d "$NS_ROOT" ] || mkdir -p "$NS_ROOT"
NS_PROLOGUE="mount --bind '$ROOT' $NS_ROOT && cd / && "
ns_path() { echo "$NS_ROOT${1#"$ROOT"}"; }

# valgrind cannot run an ASan binary. Under `make SAN=1 test` the valgrind checks use the plain
# build (made here when missing), so the code is seen by both tools; otherwise the one under test.
vg_clrattach() {
    if readelf -d "$CLRATTACH" 2>/dev/null | grep -q 'libasan'; then
        make -C "$ROOT" -s --no-print-directory SAN= BUILD=build build/clrattach >&2 || return 1
        echo "$ROOT/build/clrattach"
    else
        echo "$CLRATTACH"
    fi
}

# big_profiler DIR: the probe with 100 MB of files beside it, as a profiler directory: a delivery
# slow enough for a signal to land in it.
big_profiler() {
    mkdir -p "$1"
    cp "$PROBE" "$1/"
    local i
    for i in $(seq 10); do head -c 10M /dev/zero >"$1/pad$i.bin"; done
}

ok() { echo "ok $1"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL $1: $2"; FAILED=$((FAILED + 1)); }

# The suite needs root (namespaces, other uids) and a .NET runtime; it never skips.
require_env() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "FAIL e2e-prerequisites: the end-to-end tests need root (unshare, setpriv)" >&2
        exit 1
    fi
    local f
    for f in "$CLRATTACH" "$PROBE" "$TARGET_DLL"; do
        [ -e "$f" ] || { echo "FAIL e2e-prerequisites: $f missing (run make all target)" >&2; exit 1; }
    done
    command -v dotnet >/dev/null || { echo "FAIL e2e-prerequisites: dotnet not on PATH" >&2; exit 1; }
}

# start_target NAME [--pidns] [--uid N] [--tmpdir DIR] [--env K=V]... [--seconds N] [--pre CMD]
# --suspended starts the runtime paused at startup (DOTNET_DefaultDiagnosticPortSuspend=1).
# --pre runs a shell command as root inside the target's mount namespace before the app starts
# (remount /tmp noexec, make the root read-only, add an emptyDir-like tmpfs...).
# Starts the target and sets TARGET_PID (its pid in OUR namespace) and TARGET_LOG.
# TARGET_EXEC, when set, is the app to run instead of `dotnet $TARGET_DLL`: a self-contained
# publish such as tests/arm64/'s linux-arm64 build, which the kernel hands to qemu-user.
start_target() {
    local name=$1
    shift
    local pidns=0 uid=0 tmpdir="" seconds=120 pre="" suspended=0
    local envs=(HOME=/tmp DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1)
    while [ $# -gt 0 ]; do
        case $1 in
        --pidns) pidns=1 ;;
        --uid) uid=$2; shift ;;
        --tmpdir) tmpdir=$2; envs+=("TMPDIR=$2"); shift ;;
        --env) envs+=("$2"); shift ;;
        --seconds) seconds=$2; shift ;;
        --pre) pre="$pre$2 && "; shift ;;
        --suspended) suspended=1; envs+=(DOTNET_DefaultDiagnosticPortSuspend=1) ;;
        *) echo "start_target: unknown $1" >&2; return 2 ;;
        esac
        shift
    done
    TARGET_LOG="$WORK/$name.log"
    local mk=""
    [ -n "$tmpdir" ] && mk="mkdir -p '$tmpdir' && chmod 1777 '$tmpdir' && "
    local drop=""
    [ "$uid" != 0 ] && drop="setpriv --reuid=$uid --regid=$uid --clear-groups"
    # A container's view: private mounts, a fresh tmpfs on /tmp that only the target sees.
    pre=${pre//"$ROOT"/$NS_ROOT}
    local app="dotnet '$(ns_path "$TARGET_DLL")'"
    [ -n "${TARGET_EXEC:-}" ] && app="'$(ns_path "$TARGET_EXEC")'"
    local inner="${NS_PROLOGUE}mount -t tmpfs -o mode=1777 tmpfs /tmp && ${mk}${pre}exec env -i PATH=/usr/bin:/bin ${envs[*]} $drop $app --seconds $seconds"
    local ns=(--mount --propagation private)
    [ $pidns = 1 ] && ns+=(--pid --fork --mount-proc)
    unshare "${ns[@]}" sh -c "$inner" >"$TARGET_LOG" 2>&1 &
    local upid=$!
    disown "$upid" # no "Killed" job notices when the cleanup ends it
    TARGET_PIDS+=("$upid")
    local i
    TARGET_PID=""
    for i in $(seq 1 300); do
        if [ -z "$TARGET_PID" ]; then
            if [ $pidns = 0 ]; then
                TARGET_PID=$upid
            else
                # /proc files have no size: read, don't test with -s.
                TARGET_PID=$(tr -d ' ' <"/proc/$upid/task/$upid/children" 2>/dev/null)
                [ -n "$TARGET_PID" ] && TARGET_PIDS+=("$TARGET_PID")
            fi
        fi
        if [ $suspended = 1 ]; then
            # A runtime suspended at startup prints nothing: wait for its socket instead, named
            # for its own pid. Before the namespace's tmpfs is mounted its /tmp is the host's,
            # where other runtimes (the SDK's build servers) have sockets of their own.
            local own=$TARGET_PID
            [ $pidns = 1 ] && own=1
            [ -n "$TARGET_PID" ] && ls "/proc/$TARGET_PID/root${tmpdir:-/tmp}" 2>/dev/null |
                grep -q "^dotnet-diagnostic-$own-" && return 0
        else
            grep -q '^ready' "$TARGET_LOG" 2>/dev/null && return 0
        fi
        sleep 0.1
    done
    echo "start_target: $name did not start:" >&2
    cat "$TARGET_LOG" >&2
    return 1
    # The runtime creates its socket while starting up; "ready" is printed after Main runs.
    return 0
}

# start_not_dotnet SECONDS: a process that is not .NET (sleep), in its own mount namespace with
# a private tmpfs on /tmp. In the machine's /tmp, a stale socket of a runtime killed long ago
# (the SDK's build servers leave them) may name the very pid it gets, and the attach would then
# rightly find that socket instead of no socket. Sets NOTNET (its pid; unshare and sh exec into
# sleep, so the pid is the sleep's) and adds it to TARGET_PIDS for the cleanup.
start_not_dotnet() {
    unshare --mount --propagation private sh -c \
        "mount -t tmpfs -o mode=1777 tmpfs /tmp && exec sleep $1" >/dev/null 2>&1 &
    NOTNET=$!
    disown "$NOTNET"
    TARGET_PIDS+=("$NOTNET")
    # The attach must see the sleep, not the shell before its exec.
    local i
    for i in $(seq 100); do
        [ "$(cat /proc/$NOTNET/comm 2>/dev/null)" = sleep ] && return 0
        sleep 0.05
    done
    return 1
}

# start_fake NAME MODE [--uid N] [--env K=V]... [--pre CMD] [--link-to PATH] [--arg STR]
#            [--pi-extra TEXT] [--comm HEX]
# Like start_target, but the process is the fake runtime (tests/tools/fake_runtime.py), always
# in its own PID namespace (its socket is named for its namespace pid) with private tmpfs on
# /tmp, /var/tmp and /dev/shm: the fallback delivery directories are then the fake's own and can
# be listed before and after. --arg shapes its command line, --pi-extra its ProcessInfo strings,
# --comm (hex bytes) its process name. Sets TARGET_PID (its pid in OUR namespace), TARGET_LOG.
FAKE="$ROOT/tests/tools/fake_runtime.py"
start_fake() {
    local name=$1 mode=$2
    shift 2
    local uid=0 pre="" fake_args=""
    local envs=(HOME=/tmp)
    while [ $# -gt 0 ]; do
        case $1 in
        --uid) uid=$2; shift ;;
        --env) envs+=("$2"); shift ;;
        --pre) pre="$pre$2 && "; shift ;;
        --link-to) fake_args="$fake_args --link-to '$2'"; shift ;;
        --arg) fake_args="$fake_args '$2'"; shift ;;
        --pi-extra) fake_args="$fake_args --pi-extra '$2'"; shift ;;
        --comm) fake_args="$fake_args --comm $2"; shift ;;
        *) echo "start_fake: unknown $1" >&2; return 2 ;;
        esac
        shift
    done
    TARGET_LOG="$WORK/$name.log"
    local drop=""
    [ "$uid" != 0 ] && drop="setpriv --reuid=$uid --regid=$uid --clear-groups"
    local tmpfs="mount -t tmpfs -o mode=1777 tmpfs"
    pre=${pre//"$ROOT"/$NS_ROOT}
    local inner="${NS_PROLOGUE}$tmpfs /tmp && $tmpfs /var/tmp && $tmpfs /dev/shm && ${pre}exec env -i \
PATH=/usr/bin:/bin ${envs[*]} $drop python3 '$(ns_path "$FAKE")' $mode $fake_args"
    unshare --mount --propagation private --pid --fork --mount-proc sh -c "$inner" \
        >"$TARGET_LOG" 2>&1 &
    local upid=$!
    disown "$upid"
    TARGET_PIDS+=("$upid")
    TARGET_PID=""
    local i
    for i in $(seq 1 100); do
        if [ -z "$TARGET_PID" ]; then
            TARGET_PID=$(tr -d ' ' <"/proc/$upid/task/$upid/children" 2>/dev/null)
            [ -n "$TARGET_PID" ] && TARGET_PIDS+=("$TARGET_PID")
        fi
        grep -aq '^ready' "$TARGET_LOG" 2>/dev/null && return 0
        sleep 0.05
    done
    echo "start_fake: $name ($mode) did not start:" >&2
    cat -v "$TARGET_LOG" >&2
    return 1
}

# clr [args...]: runs clrattach with the default (kill) seccomp filter; stdout to $OUT, stderr to
# $ERR, exit code in $RC.
clr() {
    OUT="$WORK/out.$$.txt"
    ERR="$WORK/err.$$.txt"
    "$CLRATTACH" "$@" >"$OUT" 2>"$ERR"
    RC=$?
    return 0
}

# json_get FILE KEY: a top-level field of the first JSON line.
json_get() {
    python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).readline()); v=d
for k in sys.argv[2].split("."): v=v.get(k) if isinstance(v,dict) else None
print("" if v is None else v)' "$1" "$2"
}

# probe_report PID PATH_IN_TARGET: waits until the probe's report exists in the target and its
# counters moved, and prints the counter summary. Fails after ~10 s.
probe_report() {
    local pid=$1 path=$2 i
    for i in $(seq 1 100); do
        if [ -s "/proc/$pid/root$path" ] && python3 - "/proc/$pid/root$path" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
c = d["counters"]
assert d["pid"] > 0 and d["runtime"]["type"] == "CoreCLR"
assert c["gc_started"] > 0 and c["exceptions_thrown"] > 0 and c["threads_created"] > 0
print("gc=%d exceptions=%d threads=%d jit=%d" % (c["gc_started"], c["exceptions_thrown"], c["threads_created"], c["jit_compilations"]))
PY
        then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

# is_mapped PID PATH_IN_TARGET: the delivered .so is mapped in the target.
is_mapped() {
    grep -qF "$2" "/proc/$1/maps"
}

# start_apiserver NAME [APISERVER-OPTIONS...]: the project's test API server
# (tests/k8s/apiserver.py) on loopback, with certificates and a token of its own in $WORK. Sets
# URL, CA and TOKEN (the token file); ctl METHOD PATH [BODY] talks to it. Fails (FAIL NAME-...)
# when it does not come up.
start_apiserver() {
    local name=$1
    shift
    TOKEN=$WORK/token
    timeout -k 5 60 "$ROOT/tests/k8s/gen-certs.sh" "$WORK/certs" >/dev/null 2>&1 ||
        { echo "FAIL $name-certs"; return 1; }
    echo "token-$name-$$" >"$TOKEN"
    python3 "$ROOT/tests/k8s/apiserver.py" --ca-dir "$WORK/certs" --token-file "$TOKEN" "$@" \
        --port-file "$WORK/port" 2>"$WORK/apiserver.log" &
    local srv=$!
    disown "$srv"
    TARGET_PIDS+=("$srv")
    for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.1; done
    [ -s "$WORK/port" ] || { echo "FAIL $name-apiserver: $(cat "$WORK/apiserver.log")"; return 1; }
    URL=https://127.0.0.1:$(cat "$WORK/port")
    CA=$WORK/certs/ca.crt
}
ctl() { timeout -k 5 30 curl -sS --fail --cacert "$CA" -X "$1" "$URL$2" ${3:+--data-binary "$3"}; }

finish() {
    echo "$1: $PASSED passed, $FAILED failed"
    [ "$FAILED" -eq 0 ]
}
