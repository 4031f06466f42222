# shellcheck shell=bash
# What every suite shares about where it may put sockets and when it may not run (sourced).
#
# Skipping: a suite runs unless CLRATTACH_SKIP_SUITES (names, comma- or space-separated: e2e,
# containers, cluster, apiserver, arm64, image, ...) names it; one that cannot start a part it
# needs (an engine, a build, a tool) then fails, in CI and outside it alike, and says how to skip
# it. A skipped suite prints "SKIP <name>: ..." and tests/run-all.sh names it in its summary.
# Under CI=true no suite is skipped, whatever the variable says.
#
# Sockets: a Unix socket's path may have at most 107 bytes (sun_path), and the checkout's path
# may be long. Every socket a test or a suite's daemon makes lives in a short directory of its
# own (short_run_dir), never at a depth set by the checkout's path; state stays under build/.

SUN_PATH_MAX=107

# suite_skipped NAME: true (after printing the SKIP line) when CLRATTACH_SKIP_SUITES names it.
# Under CI=true nothing is skipped: the variable is ignored, and a line says so.
suite_skipped() {
    local list=" ${CLRATTACH_SKIP_SUITES:-} "
    list=${list//,/ }
    [[ $list == *" $1 "* ]] || return 1
    if [ "${CI:-}" = true ]; then
        echo "note: CI=true: CLRATTACH_SKIP_SUITES names $1, which runs all the same"
        return 1
    fi
    echo "SKIP $1: CLRATTACH_SKIP_SUITES names it"
    return 0
}

# suite_cannot_run NAME REASON: the FAIL line of a suite that cannot start a part it needs.
suite_cannot_run() {
    echo "FAIL $1-prerequisites: $2 (CLRATTACH_SKIP_SUITES=$1 skips this suite, outside CI)"
}

# short_run_dir NAME [exec]: a new directory for sockets, 0700, under /run (the same in every
# test namespace, which all mount their own /tmp), else /tmp; its path on stdout. With "exec",
# where a library is delivered and mapped too, a tmpfs of its own is mounted there when /run is
# noexec. remove_run_dir removes it.
short_run_dir() {
    local base=/run d
    [ -d "$base" ] && [ -w "$base" ] || base=/tmp
    d=$(mktemp -d "$base/clrattach-$1.XXXXXX") || return 1
    if [ "${2:-}" = exec ] && findmnt -no OPTIONS -T "$d" | grep -qw noexec; then
        mount -t tmpfs -o mode=0700 tmpfs "$d" || { rmdir "$d"; return 1; }
    fi
    echo "$d"
}

# remove_run_dir DIR: what is mounted at or under DIR (deepest first), then DIR.
remove_run_dir() {
    [ -n "$1" ] && [ -d "$1" ] || return 0
    local m
    awk -v d="$1" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/mounts | sort -r |
        while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
    rm -rf --one-file-system "$1"
}

# sock_path_fits PATH WHAT: true when a socket can be bound or reached at PATH; else says which
# path, its length and the limit (WHAT: whose socket it is) on stdout.
sock_path_fits() {
    local n=${#1}
    [ "$n" -le "$SUN_PATH_MAX" ] && return 0
    echo "$2 '$1' is $n bytes, over the $SUN_PATH_MAX a Unix socket's path may have (sun_path):" \
        "put it in a shorter directory"
    return 1
}
