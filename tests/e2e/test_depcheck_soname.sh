#!/usr/bin/env bash
# The dependency check by the loader's name for a loaded library. The C++-linked vendor-shaped
# profiler (tests/vendorprof) needs libstdc++.so.6, which every .NET app on glibc has loaded
# (libcoreclr needs it) and maps as the versioned file behind that link (libstdc++.so.6.0.30).
# Once the name is gone from every directory the target's loader searches (a layout whose
# libraries come through another library's RUNPATH, a link removed after start), glibc still
# reuses the loaded object by its DT_SONAME: the check must pass, reading the mapped file's
# SONAME, and the profiler must load. With the versioned file hidden too, the sandbox leaves no
# way to read it (/proc/<pid>/map_files needs CAP_SYS_ADMIN, which it drops): its versioned name
# (libstdc++.so.6.0.30 behind libstdc++.so.6) stands for the SONAME and it loads; without the
# sandbox it is read through map_files. And an app that loaded its C++ runtime from a private
# directory (LD_LIBRARY_PATH under its own tmpfs) that is then removed, or mounted over, before
# the attach: the mapped path no longer resolves (maps say " (deleted)" for the first), and the
# loaded library still counts.
. "$(dirname "$0")/lib.sh"
require_env

VP="$ROOT/$BUILD/vendorprof"
VP_CLSID='{7C1E4B52-3A9D-4F60-B8E2-5D0A91C36F17}'
[ -e "$VP/libvendorprof.so" ] || { echo "FAIL soname-prerequisites: make vendorprof"; exit 1; }
if ! readelf -d "$VP/libvendorprof.so" | grep -q 'NEEDED.*\[libstdc++\.so\.6\]'; then
    echo "FAIL soname-prerequisites: libvendorprof.so does not need libstdc++.so.6"
    exit 1
fi

# hide_cxx PID GLOB: in the target's mount namespace, the multiarch directory is replaced by
# links to everything it held but the files matching GLOB: the runtime keeps what it mapped, but
# no directory its loader searches has them any more (/lib is a link to /usr/lib on merged-/usr
# systems; where it is a directory of its own it is covered the same way). Built aside and moved
# in at once, as the tools doing it need that directory themselves.
hide_cxx() {
    local d t
    for d in /usr/lib/$MULTIARCH /lib/$MULTIARCH; do
        [ -L "/proc/$1/root$d" ] || [ ! -d "/proc/$1/root$d" ] && continue
        [ -e "/proc/$1/root$d/.hidden" ] && continue
        t=$(echo "$d" | tr / _)
        nsenter -m -t "$1" sh -c "mkdir -p /tmp/.orig$t /tmp/.stage$t &&
            mount --bind $d /tmp/.orig$t && mount -t tmpfs tmpfs /tmp/.stage$t &&
            cp -as /tmp/.orig$t/. /tmp/.stage$t/ && rm -f /tmp/.stage$t/$2 &&
            touch /tmp/.stage$t/.hidden && mount --move /tmp/.stage$t $d" || return 1
    done
}

# seen PID PATH: PATH exists as the target sees it. Through nsenter, not /proc/PID/root: the links
# hide_cxx makes are absolute, and after /proc/PID/root those resolve against our own root.
seen() { nsenter -m -t "$1" test -e "$2"; }

# soname_case NAME GLOB: a target whose loader paths lack GLOB; sets P and CXX (the mapped C++
# runtime's path), false when that could not be set up (reported).
soname_case() {
    start_target "$1" --pidns || return 1
    P=$TARGET_PID
    CXX=$(grep -o '/[^ ]*/libstdc++\.so\.6[^ /]*$' "/proc/$P/maps" | head -n 1)
    if [ -z "$CXX" ] || [ "${CXX##*/}" = libstdc++.so.6 ]; then
        fail "$1-setup" "the app maps no versioned libstdc++: '$CXX'"
        return 1
    fi
    if ! hide_cxx "$P" "$2"; then
        fail "$1-setup" "could not hide $2 in the target's mount namespace"
        return 1
    fi
    if seen "$P" "/usr/lib/$MULTIARCH/libstdc++.so.6" || seen "$P" "/lib/$MULTIARCH/libstdc++.so.6"; then
        fail "$1-setup" "libstdc++.so.6 still visible in the target's root"
        return 1
    fi
}

# attach_vp: the vendor profiler, with its report path in the target; extra options after.
attach_vp() {
    clr attach --pid "$P" --profiler "$VP" --clsid "$VP_CLSID" --client-data "out=/tmp/vp.json" \
        --settle 300 -o json "$@"
}

loaded() {
    [ $RC -eq 0 ] && [ "$(json_get "$OUT" mapped)" = True ] &&
        is_mapped "$P" "$(json_get "$OUT" delivered_path)"
}

# 1. Only the name is gone: the mapped libstdc++.so.6.0.30 is read by its path in the target's
# root, under the sandbox as always, and its SONAME is the name needed.
if soname_case soname-link-gone 'libstdc++.so.6'; then
    if ! seen "$P" "$CXX"; then
        fail "soname-link-gone" "$CXX was hidden too"
    else
        attach_vp
        if loaded; then
            ok "soname-link-gone (libstdc++.so.6 is the mapped ${CXX##*/} by its SONAME; loaded)"
        else
            fail "soname-link-gone" "exit $RC $(cat "$OUT" "$ERR")"
        fi
    fi
fi

# 2. The versioned file hidden as well: under the sandbox nothing can read it (map_files needs
# CAP_SYS_ADMIN), and its versioned name stands for the SONAME; without the sandbox, map_files
# reaches the very file mapped.
if soname_case soname-all-hidden 'libstdc++.so.6*'; then
    if seen "$P" "$CXX"; then
        fail "soname-all-hidden" "$CXX still visible in the target's root"
    else
        attach_vp
        if loaded; then
            ok "soname-all-hidden-sandboxed (${CXX##*/} unreadable: its versioned name; loaded)"
        else
            fail "soname-all-hidden-sandboxed" "exit $RC $(cat "$OUT" "$ERR")"
        fi
        start_target soname-all-hidden-2 --pidns && P=$TARGET_PID && hide_cxx "$P" 'libstdc++.so.6*'
        attach_vp --seccomp off
        if loaded; then
            ok "soname-all-hidden-map-files (SONAME read through /proc/$P/map_files; loaded)"
        else
            fail "soname-all-hidden-map-files" "exit $RC $(cat "$OUT" "$ERR")"
        fi
    fi
fi

# 3. The C++ runtime loaded from a private copy (LD_LIBRARY_PATH=/tmp/priv on the app's own
# tmpfs), no libstdc++ in the system's directories, and the private directory's entries removed
# (maps: " (deleted)") or mounted over after start: the mapped path resolves to nothing, the
# loader still holds the library, the check passes and the profiler loads.
CXX_REAL=$(readlink -f "/usr/lib/$MULTIARCH/libstdc++.so.6")
for how in removed overmounted; do
    name=soname-private-$how
    if ! start_target "$name" --pidns --env LD_LIBRARY_PATH=/tmp/priv \
        --pre "mkdir -p /tmp/priv && cp '$CXX_REAL' /tmp/priv/ && ln -s '${CXX_REAL##*/}' /tmp/priv/libstdc++.so.6"; then
        fail "$name-setup" "the app did not start"
        continue
    fi
    P=$TARGET_PID
    if ! grep -q " /tmp/priv/${CXX_REAL##*/}\$" "/proc/$P/maps" || ! hide_cxx "$P" 'libstdc++.so.6*'; then
        fail "$name-setup" "the app does not map /tmp/priv/${CXX_REAL##*/}, or the system's copy could not be hidden"
        continue
    fi
    if [ $how = removed ]; then
        nsenter -m -t "$P" rm -rf /tmp/priv
        want=" /tmp/priv/${CXX_REAL##*/} (deleted)\$"
    else
        nsenter -m -t "$P" mount -t tmpfs tmpfs /tmp/priv
        want=" /tmp/priv/${CXX_REAL##*/}\$"
    fi
    if seen "$P" "/tmp/priv/${CXX_REAL##*/}" || ! grep -q "$want" "/proc/$P/maps"; then
        fail "$name-setup" "the private copy is still visible, or maps do not show it as expected"
        continue
    fi
    attach_vp
    if loaded; then
        ok "$name (the mapped /tmp/priv/${CXX_REAL##*/} no longer resolves; loaded)"
    else
        fail "$name" "exit $RC $(cat "$OUT" "$ERR")"
    fi
done

finish test_depcheck_soname
