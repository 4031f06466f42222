#!/usr/bin/env bash
# `clrattach startup-hook` against a real CoreCLR runtime in its own PID and mount namespaces, as
# another uid: a test assembly (tests/hook) delivered into the running app and its
# StartupHook.Initialize() run there (it writes a marker in the app's view); an assembly
# directory with a file the hook reads beside it, under --target-dir; and what is refused before
# anything reaches the app: an assembly without a StartupHook type (tests/nohook: the runtime
# would throw, which ends the app), a file that is not an assembly, a missing file, a runtime
# older than .NET 8 (the fake).
. "$(dirname "$0")/lib.sh"
require_env

HOOK="$ROOT/$BUILD/hook/StartupHookTest.dll"
NOHOOK="$ROOT/$BUILD/nohook/NoStartupHook.dll"
for f in "$HOOK" "$NOHOOK"; do
    [ -f "$f" ] || { fail hooks-built "$f missing: make target builds it"; finish test_startup_hook.sh; exit; }
done
MARKER=/tmp/clrattach-startup-hook

alive() { kill -0 "$1" 2>/dev/null; }

# 1. One assembly into a running app.
if start_target hook --pidns --uid 1000; then
    P=$TARGET_PID
    clr startup-hook --pid "$P" --assembly "$HOOK" -o json --dry-run-events --pod app-0
    path=$(sed -n '2p' "$OUT" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["delivered_path"])' 2>/dev/null)
    if [ $RC -eq 0 ] && grep -q '"reason":"StartupHookApplied"' "$OUT" &&
        grep -q '"action":"ApplyStartupHook"' "$OUT" &&
        sed -n '2p' "$OUT" | grep -q '"outcome":"startup_hook_applied"'; then
        ok "startup-hook: startup_hook_applied, Event StartupHookApplied"
    else
        fail "startup-hook" "exit $RC: $(cat "$OUT" "$ERR")"
    fi
    # Proven from inside: Initialize ran in the app, as the app (its own pid 1), from our file.
    marker=$(cat "/proc/$P/root$MARKER" 2>/dev/null)
    [ "$marker" = "pid 1 dir $(dirname "$path") cfg none env none" ] &&
        ok "the hook ran in the app: '$marker'" || fail "marker" "'$marker' (delivered '$path')"
    [ "$(stat -c %u "/proc/$P/root$path" 2>/dev/null)" = 1000 ] && [ "${path%.dll}" != "$path" ] &&
        ok "the assembly is in the app's view, its user's, a .dll under its content name" ||
        fail "delivered" "$path"
    alive "$P" && ok "the app runs on" || fail "app alive" "pid $P gone"

    # The same hook again: the app has it mapped, its Initialize would run twice: refused, and
    # what was there (reused) stays.
    clr startup-hook --pid "$P" --assembly "$HOOK" -o json
    if [ $RC -eq 3 ] && [ "$(json_get "$OUT" outcome)" = already_active ] &&
        grep -q 'a second time' "$OUT" && grep -q -- '--again' "$OUT" &&
        [ -f "/proc/$P/root$path" ] && alive "$P"; then
        ok "the same hook again: already_active (exit 3), --again named, the file kept"
    else
        fail "hook again" "exit $RC: $(cat "$OUT" "$ERR")"
    fi

    # Under valgrind (--seccomp=off for it alone, as in test_valgrind.sh), with --again: the
    # runtime runs the loaded one's Initialize once more.
    if command -v valgrind >/dev/null; then
        valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
            "$(vg_clrattach)" startup-hook --seccomp=off --pid "$P" --assembly "$HOOK" --again \
            >"$WORK/vg.out" 2>"$WORK/vg.err"
        vrc=$?
        [ $vrc -eq 0 ] && ! grep -q "==[0-9]*==" "$WORK/vg.err" && ok "valgrind: startup-hook" ||
            fail "valgrind startup-hook" "exit $vrc: $(head -30 "$WORK/vg.err")"
    fi

    # 2. No StartupHook type: the runtime would throw and end the app; refused here.
    rm -f "/proc/$P/root$MARKER"
    clr startup-hook --pid "$P" --assembly "$NOHOOK" -o json
    if [ $RC -eq 2 ] && [ "$(json_get "$OUT" outcome)" = usage_error ] &&
        grep -q 'no type named StartupHook' "$OUT" &&
        ! ls "/proc/$P/root/tmp/" | grep -q NoStartupHook && alive "$P"; then
        ok "no StartupHook type: usage_error before anything is delivered, the app runs on"
    else
        fail "wrong type" "exit $RC: $(cat "$OUT" "$ERR")"
    fi

    # 3. Not an assembly, and no file at all.
    echo "not an assembly" >"$WORK/notes.dll"
    clr startup-hook --pid "$P" --assembly "$WORK/notes.dll"
    [ $RC -eq 2 ] && grep -q 'not a .NET assembly' "$ERR" &&
        ok "not an assembly: refused (exit 2)" || fail "not assembly" "exit $RC: $(cat "$ERR")"
    clr startup-hook --pid "$P" --assembly "$WORK/missing.dll"
    [ $RC -eq 2 ] && grep -q 'No such file' "$ERR" &&
        ok "missing file: refused (exit 2)" || fail "missing" "exit $RC: $(cat "$ERR")"
fi

# 4. An assembly directory (the hook, a file it reads beside it, another assembly it could
#    need), under --target-dir. A fresh app: an assembly of the same name, once loaded, is the
#    one the runtime uses again.
mkdir -p "$WORK/hookdir"
cp "$HOOK" "$NOHOOK" "$WORK/hookdir/"
echo "from-the-directory" >"$WORK/hookdir/hook.cfg"
printf '# the hook reads it\nCLRATTACH_HOOK_ENV={dir}/x\n' >"$WORK/hook.env"
if start_target hook-dir --pidns --uid 1000 --pre "mount -t tmpfs -o mode=1777 tmpfs /mnt"; then
    P=$TARGET_PID
    clr startup-hook --pid "$P" --assembly "$WORK/hookdir" --target-dir /mnt -o json \
        --env @"$WORK/hook.env"
    dir=$(json_get "$OUT" delivered_dir)
    marker=$(cat "/proc/$P/root$MARKER" 2>/dev/null)
    if [ $RC -eq 0 ] && [ "${dir#/mnt/}" != "$dir" ] &&
        [ "$marker" = "pid 1 dir $dir cfg from-the-directory env $dir/x" ] &&
        [ -f "/proc/$P/root$dir/NoStartupHook.dll" ] &&
        [ "$(json_get "$OUT" env)" = "['CLRATTACH_HOOK_ENV']" ] && ! grep -q 'CLRATTACH_HOOK_ENV=' "$OUT" &&
        [ "$(json_get "$OUT" env_sent)" = 1 ]; then
        ok "assembly directory under --target-dir: the hook chosen, its files beside it; --env sent before it ({dir} expanded, named in the result without its value)"
    else
        fail "directory" "exit $RC: $(cat "$OUT" "$ERR") marker '$marker'"
    fi
fi

# 5. A hook with an assembly of its own (tests/refhook, tests/hooklib): alone, refused before
#    anything is delivered, naming what is missing; with its directory, it runs.
REFHOOK="$ROOT/$BUILD/refhook/RefHook.dll"
OTELHOOK="$ROOT/$BUILD/otelhook/OpenTelemetry.AutoInstrumentation.StartupHook.dll"
REFMARK=/tmp/clrattach-refhook
if start_target refhook --pidns --uid 1000; then
    P=$TARGET_PID
    clr startup-hook --pid "$P" --assembly "$REFHOOK" -o json
    if [ $RC -eq 13 ] && [ "$(json_get "$OUT" outcome)" = dependency_missing ] &&
        grep -q 'HookLib' "$OUT" && grep -q 'Microsoft.NETCore.App' "$OUT" &&
        grep -q -- '--assembly DIR' "$OUT" && ! grep -q 'System.Runtime' "$OUT" &&
        ! ls "/proc/$P/root/tmp/" | grep -q RefHook && [ ! -e "/proc/$P/root$REFMARK" ] &&
        alive "$P"; then
        ok "a hook without its referenced assembly: dependency_missing (exit 13) naming HookLib, nothing delivered, the app runs on"
    else
        fail "refhook alone" "exit $RC: $(cat "$OUT" "$ERR")"
    fi
    clr startup-hook --pid "$P" --assembly "$(dirname "$REFHOOK")" -o json
    marker=$(cat "/proc/$P/root$REFMARK" 2>/dev/null)
    if [ $RC -eq 0 ] && [ "$marker" = "refhook from-hooklib" ] && alive "$P"; then
        ok "the hook with its directory: it ran and used its own assembly ('$marker')"
    else
        fail "refhook dir" "exit $RC: $(cat "$OUT" "$ERR") marker '$marker'"
    fi
    # Loaded now: refused without --again (the message says why), sent with it.
    clr startup-hook --pid "$P" --assembly "$(dirname "$REFHOOK")"
    [ $RC -eq 3 ] && grep -q 'Initialize a second time' "$ERR" &&
        ok "the directory's hook again: refused (exit 3), Initialize would run twice" ||
        fail "refhook again" "exit $RC: $(cat "$OUT" "$ERR")"
    rm -f "/proc/$P/root$REFMARK"
    clr startup-hook --pid "$P" --assembly "$(dirname "$REFHOOK")" --again
    [ $RC -eq 0 ] && [ -f "/proc/$P/root$REFMARK" ] && alive "$P" &&
        ok "--again: sent, its Initialize ran once more" || fail "refhook --again" "exit $RC: $(cat "$ERR")"
fi

# 6. A hook shaped like OpenTelemetry's process-start-only one (its assembly name; its
#    Initialize ends the app): refused unless --force; with --force it is sent and the app ends.
OTELMARK=/tmp/clrattach-otelhook
if start_target otelhook --pidns --uid 1000; then
    P=$TARGET_PID
    clr startup-hook --pid "$P" --assembly "$OTELHOOK" -o json
    if [ $RC -eq 14 ] && [ "$(json_get "$OUT" outcome)" = start_only_hook ] &&
        grep -q 'process start only' "$OUT" && grep -q -- '--force' "$OUT" &&
        ! ls "/proc/$P/root/tmp/" | grep -q OpenTelemetry && alive "$P"; then
        ok "OpenTelemetry's StartupHook (by its name): start_only_hook (exit 14), nothing delivered, the app runs on"
    else
        fail "otel hook" "exit $RC: $(cat "$OUT" "$ERR")"
    fi
    clr startup-hook --pid "$P" --assembly "$OTELHOOK" --force -o json
    for _ in $(seq 50); do alive "$P" || break; sleep 0.1; done
    if { [ $RC -eq 0 ] || [ $RC -eq 12 ]; } && ! alive "$P"; then
        ok "--force: sent; the hook ended the app, as it would (exit $RC)"
    else
        fail "otel hook --force" "exit $RC, alive: $(alive "$P" && echo yes || echo no): $(cat "$OUT" "$ERR")"
    fi
fi

# 7. A runtime older than .NET 8: nothing delivered, nothing sent.
if start_fake hook-net6 net6; then
    clr startup-hook --pid "$TARGET_PID" --assembly "$HOOK" -o json
    if [ $RC -eq 15 ] && [ "$(json_get "$OUT" outcome)" = runtime_too_old ] &&
        ! grep -q 'request 04/07' "$TARGET_LOG" && ! ls "/proc/$TARGET_PID/root/tmp/" | grep -q StartupHook; then
        ok "a .NET 6 runtime: runtime_too_old (exit 15), nothing delivered or sent"
    else
        fail "too old" "exit $RC: $(cat "$OUT" "$ERR")"
    fi
else
    fail "fake net6" "did not start"
fi

# 8. Usage.
clr startup-hook --pid 1
[ $RC -eq 2 ] && ok "usage: --assembly required" || fail "usage" "exit $RC"
clr startup-hook --pid 1 --assembly "$HOOK" --target-dir relative
[ $RC -eq 2 ] && ok "usage: --target-dir must be absolute" || fail "usage target-dir" "exit $RC"
clr startup-hook --pid 1 --assembly "$HOOK" --env 'NO_VALUE'
[ $RC -eq 2 ] && grep -q -- '--env' "$ERR" && ok "usage: --env takes NAME=VALUE" ||
    fail "usage env" "exit $RC: $(cat "$ERR")"

finish test_startup_hook.sh
