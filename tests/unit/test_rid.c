/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RID normalisation: portable and distro-specific spellings the runtime reports, the RIDs that
 * must be refused (other operating systems, Android, unsupported CPUs, malformed or oversized
 * strings from a hostile target), and the bundle names each RID leads to.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/bounds.h"
#include "profset/rid.h"
#include "base/util.h"

static void test_parse_accepted(void **state)
{
    static const struct {
        const char *in, *portable;
        enum rid_libc libc;
        enum rid_arch arch;
    } t[] = {
        {"linux-x64", "linux-x64", RID_LIBC_GLIBC, RID_ARCH_X64},
        {"linux-arm64", "linux-arm64", RID_LIBC_GLIBC, RID_ARCH_ARM64},
        {"linux-arm", "linux-arm", RID_LIBC_GLIBC, RID_ARCH_ARM},
        {"linux-x86", "linux-x86", RID_LIBC_GLIBC, RID_ARCH_X86},
        {"linux-musl-x64", "linux-musl-x64", RID_LIBC_MUSL, RID_ARCH_X64},
        {"linux-musl-arm64", "linux-musl-arm64", RID_LIBC_MUSL, RID_ARCH_ARM64},
        {"linux-musl-arm", "linux-musl-arm", RID_LIBC_MUSL, RID_ARCH_ARM},
        {"alpine.3.17-x64", "linux-musl-x64", RID_LIBC_MUSL, RID_ARCH_X64},
        {"alpine.3.9-arm64", "linux-musl-arm64", RID_LIBC_MUSL, RID_ARCH_ARM64},
        {"alpine-x64", "linux-musl-x64", RID_LIBC_MUSL, RID_ARCH_X64},
        {"ubuntu.22.04-x64", "linux-x64", RID_LIBC_GLIBC, RID_ARCH_X64},
        {"rhel.8-arm64", "linux-arm64", RID_LIBC_GLIBC, RID_ARCH_ARM64},
        {"debian.12-arm", "linux-arm", RID_LIBC_GLIBC, RID_ARCH_ARM},
        {"centos.7-x64", "linux-x64", RID_LIBC_GLIBC, RID_ARCH_X64},
        {"fedora.39-x64", "linux-x64", RID_LIBC_GLIBC, RID_ARCH_X64},
        {"ol.8.0-x64", "linux-x64", RID_LIBC_GLIBC, RID_ARCH_X64},
        {"opensuse.15.5-x64", "linux-x64", RID_LIBC_GLIBC, RID_ARCH_X64},
        {"linuxmint.17-x64", "linux-x64", RID_LIBC_GLIBC, RID_ARCH_X64},
        {"azurelinux.3.0-arm64", "linux-arm64", RID_LIBC_GLIBC, RID_ARCH_ARM64},
    };
    (void)state;

    for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
        struct rid r;
        memset(&r, 0xa5, sizeof(r));
        if (rid_parse(t[i].in, &r) != 0)
            fail_msg("'%s' refused", t[i].in);
        assert_string_equal(r.portable, t[i].portable);
        assert_int_equal(r.libc, t[i].libc);
        assert_int_equal(r.arch, t[i].arch);
    }
}

static void test_parse_refused(void **state)
{
    char long_rid[RID_MAX + 8];
    static const char *const t[] = {
        "",
        "x64",
        "-x64",
        "linux",
        "linux-",
        "linux-x64 ",
        " linux-x64",
        "Linux-x64",
        "linux-X64",
        "linux-musl",
        "linux-bionic-arm64",
        "linux-gnu-x64",
        "linux.5-x64",
        "linux-musl-s390x",
        "linux-riscv64",
        "linux-ppc64le",
        "linux-loongarch64",
        "linux-armel",
        "tizen.4.0.0-armel",
        "win-x64",
        "win10-x64",
        "windows-x64",
        "macos-arm64",
        "osx-arm64",
        "osx.13-arm64",
        "freebsd-x64",
        "android.21-arm64",
        "ios-arm64",
        "browser-wasm",
        "wasi-wasm",
        "any",
        "unix-x64",
        "ubuntu.-x64",
        "ubuntu.22..04-x64",
        "ubuntu.22.-x64",
        "ubuntu.x-x64",
        "9ubuntu-x64",
        "ubu ntu-x64",
        "ubuntu\n-x64",
        "alpine.3.17-x64-",
        "alpine.3.17--x64",
        "linux-musl-x64\x01",
    };
    (void)state;

    for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
        struct rid r = {.libc = RID_LIBC_MUSL, .arch = RID_ARCH_ARM, .portable = "keep"};
        if (rid_parse(t[i], &r) != -EINVAL)
            fail_msg("'%s' accepted", t[i]);
        /* Nothing written on failure. */
        assert_string_equal(r.portable, "keep");
        assert_int_equal(r.libc, RID_LIBC_MUSL);
    }
    assert_int_equal(rid_parse(NULL, &(struct rid){0}), -EINVAL);

    /* A valid shape just over the length cap is refused; at the cap it is read. */
    memset(long_rid, 'a', sizeof(long_rid));
    memcpy(long_rid + RID_MAX - 4, "-x64", 5);
    assert_int_equal(strlen(long_rid), RID_MAX);
    struct rid r;
    assert_int_equal(rid_parse(long_rid, &r), 0);
    assert_string_equal(r.portable, "linux-x64");
    memset(long_rid, 'a', sizeof(long_rid));
    memcpy(long_rid + RID_MAX - 3, "-x64", 5);
    assert_int_equal(rid_parse(long_rid, &r), -EINVAL);
}

static void test_from_parts(void **state)
{
    struct rid r;
    (void)state;

    rid_from_parts(RID_LIBC_MUSL, RID_ARCH_ARM64, &r);
    assert_string_equal(r.portable, "linux-musl-arm64");
    rid_from_parts(RID_LIBC_GLIBC, RID_ARCH_X86, &r);
    assert_string_equal(r.portable, "linux-x86");
    rid_from_parts(RID_LIBC_UNKNOWN, RID_ARCH_X64, &r);
    assert_string_equal(r.portable, "");
    assert_int_equal(r.arch, RID_ARCH_X64);
    rid_from_parts(RID_LIBC_GLIBC, RID_ARCH_UNKNOWN, &r);
    assert_string_equal(r.portable, "");
    rid_from_parts((enum rid_libc)7, (enum rid_arch)99, &r);
    assert_int_equal(r.libc, RID_LIBC_UNKNOWN);
    assert_int_equal(r.arch, RID_ARCH_UNKNOWN);
    assert_string_equal(r.portable, "");
}

/* Every parsed RID round-trips: its portable form parses to itself. */
static void test_portable_round_trip(void **state)
{
    (void)state;

    for (int l = RID_LIBC_GLIBC; l <= RID_LIBC_MUSL; l++) {
        for (int a = RID_ARCH_X64; a <= RID_ARCH_X86; a++) {
            struct rid r, again;
            rid_from_parts((enum rid_libc)l, (enum rid_arch)a, &r);
            assert_int_equal(rid_parse(r.portable, &again), 0);
            assert_string_equal(again.portable, r.portable);
            assert_int_equal(again.libc, l);
            assert_int_equal(again.arch, a);
        }
    }
}

static void test_bundle_names(void **state)
{
    const char *names[4] = {NULL};
    struct rid r;
    (void)state;

    assert_int_equal(rid_parse("alpine.3.17-x64", &r), 0);
    assert_int_equal(rid_bundle_names(&r, names, ARRAY_SIZE(names)), 1);
    assert_string_equal(names[0], "linux-musl-x64");

    assert_int_equal(rid_parse("ubuntu.22.04-arm64", &r), 0);
    assert_int_equal(rid_bundle_names(&r, names, ARRAY_SIZE(names)), 1);
    assert_string_equal(names[0], "linux-arm64");

    /* A musl target never falls back to the glibc build, whatever the room. */
    for (int a = RID_ARCH_X64; a <= RID_ARCH_X86; a++) {
        size_t n;
        rid_from_parts(RID_LIBC_MUSL, (enum rid_arch)a, &r);
        n = rid_bundle_names(&r, names, ARRAY_SIZE(names));
        assert_true(n >= 1);
        for (size_t i = 0; i < n; i++)
            assert_non_null(strstr(names[i], "-musl-"));
    }

    rid_from_parts(RID_LIBC_UNKNOWN, RID_ARCH_X64, &r);
    assert_int_equal(rid_bundle_names(&r, names, ARRAY_SIZE(names)), 0);
    rid_from_parts(RID_LIBC_GLIBC, RID_ARCH_X64, &r);
    assert_int_equal(rid_bundle_names(&r, names, 0), 0);
    assert_int_equal(rid_bundle_names(NULL, names, 4), 0);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(rid_arch_name(RID_ARCH_ARM64), "arm64");
    assert_string_equal(rid_arch_name(RID_ARCH_UNKNOWN), "unknown");
    assert_string_equal(rid_libc_name(RID_LIBC_MUSL), "musl");
    assert_string_equal(rid_libc_name((enum rid_libc)42), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_accepted), cmocka_unit_test(test_parse_refused),
        cmocka_unit_test(test_from_parts),     cmocka_unit_test(test_portable_round_trip),
        cmocka_unit_test(test_bundle_names),   cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
