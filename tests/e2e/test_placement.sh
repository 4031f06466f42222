#!/usr/bin/env bash
# Where the profiler goes, decided by the TARGET's own mounts (statfs of each directory through
# its root, the mount named from its mountinfo): a noexec /tmp is passed
# over for a writable, exec-able fallback; a read-only root with noexec /tmp and /dev/shm is
# refused with the reasons and the emptyDir hint, and works with --target-dir on an exec-able
# volume. Real runtime, real namespaces, seccomp on.
. "$(dirname "$0")/lib.sh"
require_env

# noexec /tmp; /var/tmp gets its own writable tmpfs (the fallback).
if start_target noexec-tmp --pidns --uid 1000 \
    --pre "mount -o remount,noexec /tmp" \
    --pre "mount -t tmpfs -o mode=1777 tmpfs /var/tmp"; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" \
        --client-data out=/var/tmp/probe.json -o json
    path=$(json_get "$OUT" delivered_path)
    skipped=$(json_get "$OUT" placement_skipped)
    if [ $RC -eq 0 ] && [[ $path == /var/tmp/* ]] && [[ $skipped == *"noexec (tmpfs on /tmp)"* ]] &&
        [ "$(json_get "$OUT" mapped)" = True ] && probe_report "$P" /var/tmp/probe.json >/dev/null; then
        ok "noexec-tmp-falls-back"
    else
        fail "noexec-tmp-falls-back" "exit $RC path=$path skipped=$skipped $(cat "$ERR")"
    fi
    # Nothing was left in the noexec /tmp.
    if ! ls "/proc/$P/root/tmp" | grep -q clrprobe; then
        ok "noexec-tmp-untouched"
    else
        fail "noexec-tmp-untouched" "$(ls "/proc/$P/root/tmp")"
    fi
fi

# Read-only root, noexec /tmp and /dev/shm, and an emptyDir-like exec-able tmpfs at /mnt.
if start_target ro-root --pidns --uid 1000 \
    --pre "mount -o remount,noexec /tmp" \
    --pre "mount -t tmpfs -o mode=1777,noexec tmpfs /dev/shm" \
    --pre "mount -t tmpfs -o mode=1777 tmpfs /mnt" \
    --pre "mount --bind / / && mount -o remount,bind,ro /"; then
    P=$TARGET_PID
    clr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" -o json
    if [ $RC -eq 6 ] && [ "$(json_get "$OUT" outcome)" = delivery_failed ] &&
        grep -q "noexec" "$ERR" && grep -qi "read-only" "$ERR" && grep -q "emptyDir" "$ERR"; then
        ok "ro-root-refused-with-reasons"
    else
        fail "ro-root-refused-with-reasons" "exit $RC: $(cat "$ERR")"
    fi
    clr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --target-dir /tmp -o json
    if [ $RC -eq 6 ] && grep -q "noexec" "$ERR"; then
        ok "target-dir-noexec-refused"
    else
        fail "target-dir-noexec-refused" "exit $RC: $(cat "$ERR")"
    fi
    clr attach --pid "$P" --profiler "$PROBE" --clsid "$PROBE_CLSID" --target-dir /mnt \
        --client-data out=/mnt/probe.json -o json
    path=$(json_get "$OUT" delivered_path)
    if [ $RC -eq 0 ] && [[ $path == /mnt/* ]] && probe_report "$P" /mnt/probe.json >/dev/null; then
        ok "ro-root-target-dir"
    else
        fail "ro-root-target-dir" "exit $RC path=$path: $(cat "$ERR")"
    fi
fi

finish e2e-placement
