/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "target/proc_maps.h"

static void test_maps(void **state)
{
    (void)state;
    static const char glibc[] =
        "7f00-7f01 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\n"
        "7f02-7f03 r-xp 00000000 00:27 5                          /tmp/libclrprobe-1f2e.so\n"
        "7f04-7f05 rw-p 00000000 00:00 0 \n";
    static const char musl[] = "55-56 r-xp 0 08:01 9 /lib/ld-musl-x86_64.so.1\n";
    assert_int_equal(proc_maps_libc(glibc, sizeof(glibc) - 1), 2);
    assert_int_equal(proc_maps_libc(musl, sizeof(musl) - 1), 1);
    assert_int_equal(proc_maps_libc("", 0), 0);
    assert_int_equal(proc_maps_has(glibc, sizeof(glibc) - 1, "libclrprobe-1f2e.so"), 1);
    assert_int_equal(proc_maps_has(glibc, sizeof(glibc) - 1, "clrprobe-1f2e.so"), 0);
    assert_int_equal(proc_maps_has(glibc, sizeof(glibc) - 1, "other.so"), 0);

    /* Mapped libraries, once each, deleted ones and non-libraries skipped, capped. */
    static const char many[] =
        "1-2 r-xp 0 08:01 1 /usr/share/dotnet/shared/x/libcoreclr.so\n"
        "3-4 r--p 0 08:01 1 /usr/share/dotnet/shared/x/libcoreclr.so\n"
        "5-6 r-xp 0 08:01 2 /usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30\n"
        "7-8 r-xp 0 08:01 3 /tmp/old.so (deleted)\n"
        "9-a r--p 0 08:01 4 /usr/share/dotnet/shared/x/System.Private.CoreLib.dll\n"
        "b-c rw-p 0 00:00 0 [heap]\n";
    char libs[256];
    assert_int_equal(proc_maps_libraries(many, sizeof(many) - 1, libs, sizeof(libs), 8), 2);
    assert_string_equal(libs, "/usr/share/dotnet/shared/x/libcoreclr.so");
    assert_string_equal(libs + strlen(libs) + 1, "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30");
    /* What the loader holds: the unlinked one too, its path column whole. */
    assert_int_equal(proc_maps_loaded(many, sizeof(many) - 1, libs, sizeof(libs), 8), 3);
    const char *third = libs + strlen(libs) + 1;
    third += strlen(third) + 1;
    assert_string_equal(third, "/tmp/old.so (deleted)");
    assert_int_equal(proc_maps_libraries(many, sizeof(many) - 1, libs, sizeof(libs), 1), 1);
    assert_int_equal(proc_maps_libraries(many, sizeof(many) - 1, libs, 20, 8), 0);
}

/* Under qemu-user (binfmt_misc), exe is the emulator and maps lists the guest's runtime: the
 * RID fallback reads libcoreclr.so's ELF header. Only that exact name counts. */
static void test_maps_runtime_library(void **state)
{
    (void)state;
    static const char qemu[] =
        "4000-5000 r-xp 0 08:01 1 /usr/libexec/qemu-binfmt/aarch64-binfmt-P\n"
        "5000-6000 r-xp 0 08:01 2 /usr/share/dotnet/shared/x/libnotcoreclr.so\n"
        "6000-7000 r-xp 0 08:01 3 /usr/share/dotnet/shared/x/libcoreclr.so.bak\n"
        "7000-8000 r-xp 0 08:01 4 /usr/share/dotnet/shared/Microsoft.NETCore.App/8.0.1/"
        "libcoreclr.so\n"
        "8000-9000 r-xp 0 08:01 5 /opt/other/libcoreclr.so\n";
    char lib[128];
    assert_int_equal(proc_maps_runtime_library(qemu, sizeof(qemu) - 1, lib, sizeof(lib)), 1);
    assert_string_equal(lib, "/usr/share/dotnet/shared/Microsoft.NETCore.App/8.0.1/libcoreclr.so");
    assert_int_equal(proc_maps_runtime_library(qemu, sizeof(qemu) - 1, lib, 20), 0);
    static const char none[] = "1-2 r-xp 0 08:01 1 /usr/bin/dotnet\n"
                               "3-4 r-xp 0 08:01 2 libcoreclr.so\n"
                               "5-6 r-xp 0 08:01 3 /libcoreclr.so (deleted)\n";
    assert_int_equal(proc_maps_runtime_library(none, sizeof(none) - 1, lib, sizeof(lib)), 0);
    assert_int_equal(proc_maps_runtime_library("", 0, lib, sizeof(lib)), 0);
}

/* The map_files name of a mapped file: its first mapping's addresses without the zeros the
 * maps lines pad them with (the kernel refuses a padded name); only a whole path column matches,
 * and a malformed address column or a name that does not fit gives nothing. */
static void test_map_files_name(void **state)
{
    (void)state;
    static const char maps[] =
        "00400000-00452000 r-xp 0 08:01 1 /usr/bin/dotnet\n"
        "7f0a1c000000-7f0a1c1a0000 r--p 0 08:01 2 /usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30\n"
        "7f0a1c1a0000-7f0a1c2b0000 r-xp 1a0000 08:01 2 "
        "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30\n"
        "00000000-00001000 r--p 0 08:01 3 /zero.so\n"
        "7g00-7f10 r--p 0 08:01 4 /bad.so\n"
        "7f00+7f10 r--p 0 08:01 5 /nodash.so\n";
    char n[64];
    assert_int_equal(proc_maps_map_files_name(maps, sizeof(maps) - 1,
                                              "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30", n,
                                              sizeof(n)),
                     1);
    assert_string_equal(n, "7f0a1c000000-7f0a1c1a0000");
    assert_int_equal(
        proc_maps_map_files_name(maps, sizeof(maps) - 1, "/usr/bin/dotnet", n, sizeof(n)), 1);
    assert_string_equal(n, "400000-452000");
    assert_int_equal(proc_maps_map_files_name(maps, sizeof(maps) - 1, "/zero.so", n, sizeof(n)), 1);
    assert_string_equal(n, "0-1000");
    /* A suffix of a path is not the path. */
    assert_int_equal(
        proc_maps_map_files_name(maps, sizeof(maps) - 1, "libstdc++.so.6.0.30", n, sizeof(n)), 0);
    assert_int_equal(proc_maps_map_files_name(maps, sizeof(maps) - 1, "/bad.so", n, sizeof(n)), 0);
    assert_int_equal(proc_maps_map_files_name(maps, sizeof(maps) - 1, "/nodash.so", n, sizeof(n)),
                     0);
    /* "400000-452000" and its NUL need 14 bytes. */
    assert_int_equal(proc_maps_map_files_name(maps, sizeof(maps) - 1, "/usr/bin/dotnet", n, 13), 0);
    assert_int_equal(proc_maps_map_files_name(maps, sizeof(maps) - 1, "/usr/bin/dotnet", n, 14), 1);
    assert_int_equal(proc_maps_map_files_name("", 0, "/usr/bin/dotnet", n, sizeof(n)), 0);
}

/* The incremental maps scan: whole lines only, a cut line waits, a match in the last line
 * without its newline counts at the end, and it takes no more than the room it has. */
static void test_maps_scan_feed(void **state)
{
    (void)state;
    static struct proc_maps_scan s;
    static const char a[] = "1-2 r--p 0 0:0 1 /usr/lib/liba.so\n1-2 r-xp 0 0:0 2 /tmp/libp";
    static const char b[] = "robe.so\n";
    memset(&s, 0, sizeof(s));
    memcpy(s.buf, a, sizeof(a) - 1);
    assert_int_equal(proc_maps_scan_feed(&s, sizeof(a) - 1, "libprobe.so"), 0); /* cut: waits */
    assert_int_equal(s.have, strlen(strchr(a, '\n') + 1));
    memset(&s, 0, sizeof(s));
    memcpy(s.buf, a, sizeof(a) - 1);
    assert_int_equal(proc_maps_scan_feed(&s, sizeof(a) - 1, "libprobe.so"), 0);
    memcpy(s.buf + s.have, b, sizeof(b) - 1);
    assert_int_equal(proc_maps_scan_feed(&s, sizeof(b) - 1, "libprobe.so"), 1);
    memset(&s, 0, sizeof(s));
    memcpy(s.buf, a, sizeof(a) - 1);
    assert_int_equal(proc_maps_scan_feed(&s, sizeof(a) - 1, "libp"), 0);
    assert_int_equal(proc_maps_scan_feed(&s, 0, "libp"), 1); /* the end: the last line counts */
    assert_int_equal(s.have, 0);
    assert_int_equal(proc_maps_scan_feed(&s, sizeof(s.buf) + 1, "x"), -EINVAL);
    memset(s.buf, 'a', sizeof(s.buf));
    assert_int_equal(proc_maps_scan_feed(&s, sizeof(s.buf), "x"), -EPROTO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_maps),
        cmocka_unit_test(test_maps_runtime_library),
        cmocka_unit_test(test_maps_scan_feed),
        cmocka_unit_test(test_map_files_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
