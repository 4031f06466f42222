/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elfinfo on real files built with gcc and musl-gcc (tests/fixtures/elf, see gen.sh there), on
 * ELF images built here field by field (both classes and byte orders, conflicting libc hints),
 * and on damaged ones: every header field that holds an offset, a size or a count is pointed
 * outside the buffer, and every prefix and many random mutations of each fixture are parsed,
 * which under `make SAN=1` turns any out-of-bounds read into a failure.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "profset/elfinfo.h"
#include "base/util.h"

#define FIXTURES "tests/fixtures/elf/" /* tests run from the repo root */
#define IMG_SIZE 0x400

/* ---- fixtures ----------------------------------------------------------------------------- */

static uint8_t *load(const char *name, size_t *len)
{
    char path[256];
    char *buf = NULL;
    _cleanup_close_ int fd = -1;

    snprintf(path, sizeof(path), FIXTURES "%s", name);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fail_msg("cannot open %s", path);
    assert_int_equal(util_read_all(fd, 20 * 1024, &buf, len), 0);
    return (uint8_t *)buf;
}

static void parse_file(const char *name, struct elf_info *info)
{
    struct cla_error e = {0};
    size_t len;
    _cleanup_free_ uint8_t *buf = load(name, &len);
    int r = elfinfo_parse(buf, len, info, &e);

    if (r != 0)
        fail_msg("%s: %d %s", name, r, e.msg);
}

static void test_fixture_glibc_so(void **state)
{
    struct elf_info i;
    (void)state;

    parse_file("glibc-x64.so", &i);
    assert_int_equal(i.arch, RID_ARCH_X64);
    assert_true(i.is_64);
    assert_true(i.is_shared_object);
    assert_int_equal(i.libc, RID_LIBC_GLIBC);
    assert_string_equal(i.interp, "");
}

/* A profiler-shaped library: the entry point found through DT_GNU_HASH as dlsym() finds it, its
 * helper in DT_NEEDED, and RUNPATH kept as written ($ORIGIN is the loader's to expand). */
static void test_fixture_entry_gnu_hash(void **state)
{
    struct elf_info i;
    (void)state;

    parse_file("entry-gnu.so", &i);
    assert_true(i.exports_class_factory);
    assert_int_equal(i.n_needed, 2);
    assert_string_equal(elfinfo_needed(&i, 0), "libfxhelper.so");
    assert_string_equal(elfinfo_needed(&i, 1), "libc.so.6");
    assert_null(elfinfo_needed(&i, 2));
    assert_string_equal(i.runpath, "$ORIGIN/lib");
    assert_false(i.runpath_is_rpath);
}

static void test_fixture_entry_sysv_hash(void **state)
{
    struct elf_info i;
    (void)state;

    parse_file("entry-sysv.so", &i);
    assert_true(i.exports_class_factory);
    assert_string_equal(i.runpath, "/opt/vendor/lib");
    assert_true(i.runpath_is_rpath);
}

/* Importing the name, or not having it at all, is not exporting it. */
static void test_fixture_no_entry(void **state)
{
    struct elf_info i;
    (void)state;

    parse_file("importer.so", &i);
    assert_false(i.exports_class_factory);
    parse_file("glibc-x64.so", &i);
    assert_false(i.exports_class_factory);
    assert_string_equal(i.runpath, "");
    assert_int_equal(i.n_needed, 1);
    assert_string_equal(elfinfo_needed(&i, 0), "libc.so.6");
}

static void test_fixture_musl_so(void **state)
{
    struct elf_info i;
    (void)state;

    /* musl-gcc links against "libc.so", which is musl's SONAME there. */
    parse_file("musl-x64.so", &i);
    assert_int_equal(i.arch, RID_ARCH_X64);
    assert_true(i.is_shared_object);
    assert_int_equal(i.libc, RID_LIBC_MUSL);
    assert_string_equal(i.interp, "");
}

static void test_fixture_executables(void **state)
{
    struct elf_info i;
    (void)state;

    parse_file("glibc-x64-pie", &i);
    assert_false(i.is_shared_object); /* ET_DYN, but PT_INTERP and DF_1_PIE */
    assert_int_equal(i.libc, RID_LIBC_GLIBC);
    assert_string_equal(i.interp, "/lib64/ld-linux-x86-64.so.2");

    parse_file("glibc-x64-exec", &i);
    assert_false(i.is_shared_object);
    assert_int_equal(i.libc, RID_LIBC_GLIBC);
    assert_string_equal(i.interp, "/lib64/ld-linux-x86-64.so.2");

    parse_file("musl-x64-pie", &i);
    assert_false(i.is_shared_object);
    assert_int_equal(i.arch, RID_ARCH_X64);
    assert_int_equal(i.libc, RID_LIBC_MUSL);
    assert_string_equal(i.interp, "/lib/ld-musl-x86_64.so.1");

    parse_file("musl-x64-static", &i);
    assert_false(i.is_shared_object);
    assert_int_equal(i.libc, RID_LIBC_UNKNOWN);
    assert_string_equal(i.interp, "");
}

static void test_fixture_lying_section_headers(void **state)
{
    struct elf_info i;
    (void)state;

    /* Section headers point past the end; nothing the loader uses is touched. */
    parse_file("lying-shdr.so", &i);
    assert_int_equal(i.libc, RID_LIBC_GLIBC);
    assert_true(i.is_shared_object);
}

static void test_fixture_truncated(void **state)
{
    struct elf_info i = {.arch = RID_ARCH_ARM};
    struct cla_error e = {0};
    size_t len;
    _cleanup_free_ uint8_t *buf = load("truncated.so", &len);
    (void)state;

    assert_int_equal(len, 100);
    assert_int_equal(elfinfo_parse(buf, len, &i, &e), -EPROTO);
    assert_int_equal(i.arch, RID_ARCH_ARM); /* untouched on failure */
    assert_non_null(strstr(e.msg, "program headers"));
}

/* ---- images built here -------------------------------------------------------------------- */

struct spec {
    bool is_64, be;
    uint16_t machine, type;
    const char *interp; /* NULL: no PT_INTERP */
    const char *needed[3];
    const char *soname; /* NULL: no DT_SONAME; its entry follows the DT_NEEDED ones */
    uint64_t flags1;
    bool no_dynamic;
};

/* Layout: ELF header, then program headers (LOAD covering the file, INTERP, DYNAMIC), the
 * interpreter string at 0x200, the string table at 0x280, the dynamic section at 0x300. */
#define OFF_INTERP 0x200
#define OFF_STRTAB 0x280
#define OFF_DYN    0x300
#define VADDR      0x10000

static void put(uint8_t *b, size_t off, uint64_t v, unsigned size, bool be)
{
    for (unsigned i = 0; i < size; i++)
        b[off + i] = (uint8_t)(v >> (be ? 8 * (size - 1 - i) : 8 * i));
}

/* Offset of field `f64`/`f32` for the image's class. */
#define F(s, f64, f32) ((s)->is_64 ? (f64) : (f32))

static void put_phdr(uint8_t *b, const struct spec *s, size_t off, uint32_t type, uint64_t offset,
                     uint64_t size)
{
    unsigned w = s->is_64 ? 8 : 4;
    put(b, off, type, 4, s->be);
    put(b, off + F(s, 8, 4), offset, w, s->be);
    put(b, off + F(s, 16, 8), VADDR + offset, w, s->be);  /* p_vaddr */
    put(b, off + F(s, 24, 12), VADDR + offset, w, s->be); /* p_paddr */
    put(b, off + F(s, 32, 16), size, w, s->be);           /* p_filesz */
    put(b, off + F(s, 40, 20), size, w, s->be);           /* p_memsz */
}

static size_t dyn_entry(const struct spec *s, size_t i)
{
    return OFF_DYN + i * (s->is_64 ? 16 : 8);
}

static void put_dyn(uint8_t *b, const struct spec *s, size_t i, uint64_t tag, uint64_t val)
{
    unsigned w = s->is_64 ? 8 : 4;
    put(b, dyn_entry(s, i), tag, w, s->be);
    put(b, dyn_entry(s, i) + w, val, w, s->be);
}

/* Fills img[IMG_SIZE]; returns the offset of the program headers. */
static size_t build(const struct spec *s, uint8_t *img)
{
    size_t ph = s->is_64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
    size_t phent = s->is_64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
    size_t n = 1, strpos = 1, d = 0;

    memset(img, 0, IMG_SIZE);
    memcpy(img, ELFMAG, SELFMAG);
    img[EI_CLASS] = s->is_64 ? ELFCLASS64 : ELFCLASS32;
    img[EI_DATA] = s->be ? ELFDATA2MSB : ELFDATA2LSB;
    img[EI_VERSION] = EV_CURRENT;
    put(img, 16, s->type, 2, s->be);
    put(img, 18, s->machine, 2, s->be);
    put(img, 20, EV_CURRENT, 4, s->be);
    put(img, F(s, 32, 28), ph, s->is_64 ? 8 : 4, s->be); /* e_phoff */
    put(img, F(s, 52, 40), ph, 2, s->be);                /* e_ehsize */
    put(img, F(s, 54, 42), phent, 2, s->be);

    put_phdr(img, s, ph, PT_LOAD, 0, IMG_SIZE);
    if (s->interp) {
        memcpy(img + OFF_INTERP, s->interp, strlen(s->interp) + 1);
        put_phdr(img, s, ph + n++ * phent, PT_INTERP, OFF_INTERP, strlen(s->interp) + 1);
    }
    if (!s->no_dynamic) {
        for (size_t i = 0; i < 3 && s->needed[i]; i++) {
            memcpy(img + OFF_STRTAB + strpos, s->needed[i], strlen(s->needed[i]) + 1);
            put_dyn(img, s, d++, DT_NEEDED, strpos);
            strpos += strlen(s->needed[i]) + 1;
        }
        if (s->soname) {
            memcpy(img + OFF_STRTAB + strpos, s->soname, strlen(s->soname) + 1);
            put_dyn(img, s, d++, DT_SONAME, strpos);
            strpos += strlen(s->soname) + 1;
        }
        put_dyn(img, s, d++, DT_STRTAB, VADDR + OFF_STRTAB);
        put_dyn(img, s, d++, DT_STRSZ, strpos);
        if (s->flags1)
            put_dyn(img, s, d++, DT_FLAGS_1, s->flags1);
        put_dyn(img, s, d++, DT_NULL, 0);
        put_phdr(img, s, ph + n++ * phent, PT_DYNAMIC, OFF_DYN, IMG_SIZE - OFF_DYN);
    }
    put(img, F(s, 56, 44), n, 2, s->be); /* e_phnum */
    return ph;
}

static int parse_img(const uint8_t *img, size_t len, struct elf_info *i)
{
    struct cla_error e = {0};
    int r = elfinfo_parse(img, len, i, &e);
    /* Every failure says why. */
    if (r < 0)
        assert_true(e.msg[0] != '\0' && e.code == r);
    return r;
}

static const struct spec x64_so = {
    .is_64 = true, .machine = EM_X86_64, .type = ET_DYN, .needed = {"libm.so.6", "libc.so.6"}};

static void test_built_baseline(void **state)
{
    uint8_t img[IMG_SIZE];
    struct elf_info i;
    (void)state;

    build(&x64_so, img);
    assert_int_equal(parse_img(img, sizeof(img), &i), 0);
    assert_int_equal(i.arch, RID_ARCH_X64);
    assert_int_equal(i.libc, RID_LIBC_GLIBC);
    assert_true(i.is_shared_object);
}

/* DT_SONAME kept as written, in both classes; one outside the string table is malformed. */
static void test_built_soname(void **state)
{
    uint8_t img[IMG_SIZE];
    struct elf_info i;
    (void)state;

    struct spec s = x64_so;
    s.soname = "libstdc++.so.6";
    build(&s, img);
    assert_int_equal(parse_img(img, sizeof(img), &i), 0);
    assert_string_equal(i.soname, "libstdc++.so.6");
    s.is_64 = false;
    s.machine = EM_386;
    build(&s, img);
    assert_int_equal(parse_img(img, sizeof(img), &i), 0);
    assert_string_equal(i.soname, "libstdc++.so.6");
    /* No DT_SONAME: "". */
    build(&x64_so, img);
    assert_int_equal(parse_img(img, sizeof(img), &i), 0);
    assert_string_equal(i.soname, "");
    /* Its offset past DT_STRSZ (entry 2, after the two DT_NEEDED). */
    s = x64_so;
    s.soname = "libx.so.1";
    build(&s, img);
    put_dyn(img, &s, 2, DT_SONAME, 0x70);
    assert_int_equal(parse_img(img, sizeof(img), &i), -EPROTO);
}

/* The system's own C++ runtime: its SONAME is the name every C++ library needs, not its file
 * name (libstdc++.so.6.0.30 and the like), which is what depcheck matches a mapped copy by. */
static void test_system_libstdcxx_soname(void **state)
{
    (void)state;
    _cleanup_close_ int fd = open("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        skip();
    char *buf = NULL;
    size_t len;
    assert_int_equal(util_read_all(fd, ELF_READ_MAX, &buf, &len), 0);
    struct cla_error e = {0};
    struct elf_info i;
    int r = elfinfo_parse((const uint8_t *)buf, len, &i, &e);
    free(buf);
    if (r != 0)
        fail_msg("libstdc++.so.6: %d %s", r, e.msg);
    assert_string_equal(i.soname, "libstdc++.so.6");
    /* The fixtures carry none. */
    parse_file("entry-gnu.so", &i);
    assert_string_equal(i.soname, "");
}

static void test_built_arm32_both_byte_orders(void **state)
{
    struct spec s = {.machine = EM_ARM,
                     .type = ET_EXEC,
                     .interp = "/lib/ld-linux-armhf.so.3",
                     .needed = {"libc.so.6"}};
    uint8_t img[IMG_SIZE];
    struct elf_info i;
    (void)state;

    for (int be = 0; be < 2; be++) {
        s.be = be;
        build(&s, img);
        assert_int_equal(parse_img(img, sizeof(img), &i), 0);
        assert_int_equal(i.arch, RID_ARCH_ARM);
        assert_false(i.is_64);
        assert_false(i.is_shared_object);
        assert_int_equal(i.libc, RID_LIBC_GLIBC);
        assert_string_equal(i.interp, "/lib/ld-linux-armhf.so.3");
    }
}

static void test_built_machines(void **state)
{
    static const struct {
        bool is_64;
        uint16_t machine;
        enum rid_arch arch;
    } t[] = {
        {true, EM_AARCH64, RID_ARCH_ARM64},   {false, EM_386, RID_ARCH_X86},
        {false, EM_X86_64, RID_ARCH_UNKNOWN}, /* x32 */
        {true, EM_ARM, RID_ARCH_UNKNOWN},     {true, EM_RISCV, RID_ARCH_UNKNOWN},
        {true, EM_S390, RID_ARCH_UNKNOWN},
    };
    uint8_t img[IMG_SIZE];
    struct elf_info i;
    (void)state;

    for (size_t k = 0; k < ARRAY_SIZE(t); k++) {
        struct spec s = x64_so;
        s.is_64 = t[k].is_64;
        s.machine = t[k].machine;
        build(&s, img);
        assert_int_equal(parse_img(img, sizeof(img), &i), 0);
        assert_int_equal(i.arch, t[k].arch);
        assert_int_equal(i.is_64, t[k].is_64);
    }
}

static void test_built_libc_votes(void **state)
{
    static const struct {
        const char *interp, *needed;
        enum rid_libc libc;
    } t[] = {
        {NULL, "libc.musl-aarch64.so.1", RID_LIBC_MUSL}, /* Alpine's SONAME */
        {"/lib/ld-musl-aarch64.so.1", NULL, RID_LIBC_MUSL},
        {"/lib/ld-linux-aarch64.so.1", NULL, RID_LIBC_GLIBC},
        {"/lib/ld-musl-x86_64.so.1", "libc.so.6", RID_LIBC_UNKNOWN}, /* conflict */
        {"/lib64/ld-linux-x86-64.so.2", "libc.so", RID_LIBC_UNKNOWN},
        {NULL, "libstdc++.so.6", RID_LIBC_UNKNOWN},
        {NULL, "libc.so.60", RID_LIBC_UNKNOWN},
        {"/opt/lib/libc.so.6x", NULL, RID_LIBC_UNKNOWN},
    };
    uint8_t img[IMG_SIZE];
    struct elf_info i;
    (void)state;

    for (size_t k = 0; k < ARRAY_SIZE(t); k++) {
        struct spec s = {.is_64 = true,
                         .machine = EM_AARCH64,
                         .type = ET_DYN,
                         .interp = t[k].interp,
                         .needed = {t[k].needed}};
        build(&s, img);
        assert_int_equal(parse_img(img, sizeof(img), &i), 0);
        if (i.libc != t[k].libc)
            fail_msg("case %zu: libc %d, want %d", k, i.libc, t[k].libc);
    }
}

static void test_built_pie_flag(void **state)
{
    struct spec s = x64_so;
    uint8_t img[IMG_SIZE];
    struct elf_info i;
    (void)state;

    s.flags1 = DF_1_PIE | DF_1_NOW;
    build(&s, img);
    assert_int_equal(parse_img(img, sizeof(img), &i), 0);
    assert_false(i.is_shared_object);
    s.flags1 = DF_1_NOW;
    build(&s, img);
    assert_int_equal(parse_img(img, sizeof(img), &i), 0);
    assert_true(i.is_shared_object);
}

static void test_not_elf(void **state)
{
    uint8_t img[IMG_SIZE];
    struct elf_info i;
    (void)state;

    assert_int_equal(parse_img(NULL, 0, &i), -ENOEXEC);
    assert_int_equal(parse_img((const uint8_t *)"\x7f"
                                                "EL",
                               3, &i),
                     -ENOEXEC);
    assert_int_equal(parse_img((const uint8_t *)"#!/bin/sh\n echo hi there\n", 25, &i), -ENOEXEC);
    build(&x64_so, img);
    assert_int_equal(parse_img(img, EI_NIDENT - 1, &i), -ENOEXEC);
    assert_int_equal(parse_img(img, EI_NIDENT, &i), -EPROTO); /* ELF, but no header */
}

/* One damaged field per case, on the x64 image (ph = 64, three program headers). */
static void test_malformed_headers(void **state)
{
    static const struct {
        const char *what;
        size_t off;
        unsigned size;
        uint64_t val;
    } t[] = {
        {"class", EI_CLASS, 1, 3},
        {"byte order", EI_DATA, 1, 0},
        {"ident version", EI_VERSION, 1, 2},
        {"type ET_REL", 16, 2, ET_REL},
        {"type ET_CORE", 16, 2, ET_CORE},
        {"phoff past the end", 32, 8, IMG_SIZE},
        {"phoff wraps", 32, 8, UINT64_MAX - 8},
        {"phentsize", 54, 2, 32},
        {"phnum 0", 56, 2, 0},
        {"phnum PN_XNUM", 56, 2, PN_XNUM},
        {"phnum over the cap", 56, 2, ELF_MAX_PHDRS + 1},
        {"phnum past the end", 56, 2, 18}, /* 64 + 18 * 56 > 1024 */
        /* PT_LOAD is at 64, PT_DYNAMIC at 64 + 56 = 120. */
        {"dynamic offset past the end", 120 + 8, 8, IMG_SIZE + 8},
        {"dynamic offset wraps", 120 + 8, 8, UINT64_MAX - 15},
        {"dynamic size past the end", 120 + 32, 8, IMG_SIZE},
        {"dynamic size wraps", 120 + 32, 8, UINT64_MAX},
        {"load size short of strtab", 64 + 32, 8, OFF_STRTAB + 4},
        {"load vaddr elsewhere", 64 + 16, 8, 0x400000},
        {"load offset wraps", 64 + 8, 8, UINT64_MAX - 0x100},
        {"load offset past the end", 64 + 8, 8, IMG_SIZE},
        /* Dynamic entries: NEEDED libm, NEEDED libc, STRTAB, STRSZ, NULL. */
        {"needed offset past strsz", OFF_DYN + 8, 8, 200},
        {"needed offset huge", OFF_DYN + 16 + 8, 8, UINT64_MAX},
        {"strtab unmapped", OFF_DYN + 32 + 8, 8, 0x20},
        {"strtab wraps", OFF_DYN + 32 + 8, 8, UINT64_MAX - 2},
        {"strsz huge", OFF_DYN + 48 + 8, 8, UINT64_MAX / 2},
        {"strsz past the segment", OFF_DYN + 48 + 8, 8, IMG_SIZE},
        {"strsz cuts a name", OFF_DYN + 48 + 8, 8, 12},
        {"no strtab", OFF_DYN + 32, 8, DT_DEBUG},
    };
    uint8_t img[IMG_SIZE];
    struct elf_info i;
    (void)state;

    for (size_t k = 0; k < ARRAY_SIZE(t); k++) {
        int r;
        build(&x64_so, img);
        put(img, t[k].off, t[k].val, t[k].size, false);
        r = parse_img(img, sizeof(img), &i);
        if (r != -EPROTO)
            fail_msg("%s: got %d, want -EPROTO", t[k].what, r);
    }
}

static void test_dynamic_without_null(void **state)
{
    uint8_t img[IMG_SIZE];
    struct elf_info i;
    (void)state;

    /* Fill the whole dynamic segment with DT_DEBUG entries: the loop must stop at its end. */
    build(&x64_so, img);
    for (size_t k = 0; dyn_entry(&x64_so, k) + 16 <= IMG_SIZE; k++)
        put_dyn(img, &x64_so, k, DT_DEBUG, 0);
    assert_int_equal(parse_img(img, sizeof(img), &i), -EPROTO);
}

static void test_too_many_needed(void **state)
{
    uint8_t img[IMG_SIZE];
    struct elf_info i;
    (void)state;

    build(&x64_so, img);
    for (size_t k = 0; dyn_entry(&x64_so, k) + 16 <= IMG_SIZE; k++)
        put_dyn(img, &x64_so, k, DT_NEEDED, 1);
    /* 48 entries fit: under ELF_MAX_NEEDED, so it fails on the missing DT_NULL instead. */
    assert_int_equal(parse_img(img, sizeof(img), &i), -EPROTO);
}

static void test_interp_malformed(void **state)
{
    struct spec s = x64_so;
    uint8_t img[IMG_SIZE];
    struct elf_info i;
    char longpath[ELF_INTERP_MAX + 2];
    size_t ph;
    (void)state;

    s.interp = "/lib/ld-musl-x86_64.so.1";
    /* PT_INTERP is the second program header. */
    ph = build(&s, img) + sizeof(Elf64_Phdr);
    put(img, ph + 32, 10, 8, false); /* filesz cuts the NUL off */
    assert_int_equal(parse_img(img, sizeof(img), &i), -EPROTO);
    put(img, ph + 32, 0, 8, false);
    assert_int_equal(parse_img(img, sizeof(img), &i), -EPROTO);
    put(img, ph + 32, UINT64_MAX, 8, false);
    assert_int_equal(parse_img(img, sizeof(img), &i), -EPROTO);

    /* An empty interpreter string. */
    build(&s, img);
    img[OFF_INTERP] = '\0';
    assert_int_equal(parse_img(img, sizeof(img), &i), -EPROTO);

    /* Over the cap: ELF_INTERP_MAX + 1 bytes before the NUL (the string runs into the
     * string table area, which the layout allows for this one case). */
    memset(longpath, 'a', sizeof(longpath) - 1);
    longpath[sizeof(longpath) - 1] = '\0';
    s.interp = longpath;
    s.no_dynamic = true;
    build(&s, img);
    assert_int_equal(parse_img(img, sizeof(img), &i), -EPROTO);
    longpath[ELF_INTERP_MAX] = '\0'; /* exactly at the cap */
    build(&s, img);
    assert_int_equal(parse_img(img, sizeof(img), &i), 0);
    assert_int_equal(strlen(i.interp), ELF_INTERP_MAX);
}

static void test_repeated_segments(void **state)
{
    struct spec s = x64_so;
    uint8_t img[IMG_SIZE];
    struct elf_info i;
    size_t ph;
    (void)state;

    s.interp = "/lib/ld-musl-x86_64.so.1";
    ph = build(&s, img);
    /* Turn the PT_LOAD into a second PT_INTERP, then into a second PT_DYNAMIC. */
    put(img, ph, PT_INTERP, 4, false);
    assert_int_equal(parse_img(img, sizeof(img), &i), -EPROTO);
    put(img, ph, PT_DYNAMIC, 4, false);
    assert_int_equal(parse_img(img, sizeof(img), &i), -EPROTO);
}

/* ---- truncation and mutation sweeps ------------------------------------------------------- */

static const char *const all_fixtures[] = {
    "glibc-x64.so",    "musl-x64.so",   "glibc-x64-pie", "musl-x64-pie",  "glibc-x64-exec",
    "musl-x64-static", "lying-shdr.so", "entry-gnu.so",  "entry-sysv.so", "importer.so",
};

static void check_result(int r, const char *name, size_t n)
{
    if (r != 0 && r != -EPROTO && r != -ENOEXEC)
        fail_msg("%s (%zu): unexpected %d", name, n, r);
}

static void test_every_prefix(void **state)
{
    (void)state;

    for (size_t f = 0; f < ARRAY_SIZE(all_fixtures); f++) {
        size_t len;
        _cleanup_free_ uint8_t *buf = load(all_fixtures[f], &len);
        struct elf_info i;
        unsigned ok = 0;

        /* A heap copy of exactly n bytes, so ASan sees any read past the given length. */
        for (size_t n = 0; n <= len; n++) {
            _cleanup_free_ uint8_t *cut = malloc(n ? n : 1);
            int r;
            assert_non_null(cut);
            memcpy(cut, buf, n);
            r = parse_img(cut, n, &i);
            check_result(r, all_fixtures[f], n);
            ok += r == 0;
        }
        /* The whole file parses; a prefix may too once it holds everything the loader needs. */
        assert_true(ok >= 1);
        assert_int_equal(parse_img(buf, len, &i), 0);
    }
}

/* Where `--profiler -` stops reading: at the end the headers give, which for a linked file is its
 * size (the section header table comes last); never before, whatever prefix has arrived. */
static void test_file_end(void **state)
{
    (void)state;

    for (size_t f = 0; f < ARRAY_SIZE(all_fixtures); f++) {
        size_t len;
        _cleanup_free_ uint8_t *buf = load(all_fixtures[f], &len);
        bool lying = strcmp(all_fixtures[f], "lying-shdr.so") == 0;
        uint64_t end = 0;
        int r = elfinfo_file_end(buf, len, &end);
        if (lying) {
            assert_true(r == 1 || r == 0 || r == -EPROTO);
            continue;
        }
        if (r != 1 || end != len)
            fail_msg("%s: %d, end %llu of %zu", all_fixtures[f], r, (unsigned long long)end, len);
        for (size_t n = 0; n < len; n++) {
            _cleanup_free_ uint8_t *cut = malloc(n ? n : 1);
            assert_non_null(cut);
            memcpy(cut, buf, n);
            uint64_t e2 = 0;
            r = elfinfo_file_end(cut, n, &e2);
            /* Not known yet, or known and the same: never an end short of the file. */
            if (!(r == 0 || (r == 1 && e2 == len)))
                fail_msg("%s, %zu bytes: %d, end %llu", all_fixtures[f], n, r,
                         (unsigned long long)e2);
        }
    }
    /* Not ELF, or no end to tell. */
    uint64_t end;
    assert_int_equal(elfinfo_file_end((const uint8_t *)"#!/bin/sh\n", 10, &end), -ENOEXEC);
    assert_int_equal(elfinfo_file_end((const uint8_t *)"\177EL", 4, &end), -ENOEXEC);
    assert_int_equal(elfinfo_file_end((const uint8_t *)"\177ELF", 4, &end), 0);
    uint8_t img[IMG_SIZE];
    size_t n = IMG_SIZE;
    build(&x64_so, img);
    assert_int_equal(elfinfo_file_end(img, n, &end), 1);
    assert_true(end <= n);
    img[EI_CLASS] = 9;
    assert_int_equal(elfinfo_file_end(img, n, &end), -EPROTO);
    build(&x64_so, img);
    /* A section header table claimed past the cap: nothing to wait for, the read stops there. */
    put(img, 40, (uint64_t)PROFILER_MAX_SIZE * 2, 8, false);
    put(img, 58, sizeof(Elf64_Shdr), 2, false);
    put(img, 60, 3, 2, false);
    assert_int_equal(elfinfo_file_end(img, n, &end), 1);
    assert_true(end > PROFILER_MAX_SIZE);
    /* One at the very end of the 64-bit range does not wrap. */
    put(img, 40, UINT64_MAX - 8, 8, false);
    assert_int_equal(elfinfo_file_end(img, n, &end), 1);
    assert_int_equal(end, UINT64_MAX);
    /* PN_XNUM: the parser refuses it, so no end is told. */
    build(&x64_so, img);
    put(img, 56, 0xffff, 2, false);
    assert_int_equal(elfinfo_file_end(img, n, &end), -EPROTO);
}

static void test_random_mutations(void **state)
{
    uint64_t seed = 0x9e3779b97f4a7c15u;
    unsigned parsed = 0, rejected = 0;
    (void)state;

    for (size_t f = 0; f < ARRAY_SIZE(all_fixtures); f++) {
        size_t len;
        _cleanup_free_ uint8_t *buf = load(all_fixtures[f], &len);

        for (unsigned round = 0; round < 3000; round++) {
            _cleanup_free_ uint8_t *m = malloc(len);
            struct elf_info i;
            int r;
            assert_non_null(m);
            memcpy(m, buf, len);
            /* Damage 1-4 bytes, biased towards the first 512 where the headers live. */
            for (unsigned k = 0; k <= round % 4; k++) {
                seed = seed * 6364136223846793005u + 1442695040888963407u;
                size_t at = (size_t)(seed >> 33) % (round % 2 ? len : (len < 512 ? len : 512));
                m[at] = (uint8_t)(seed >> 17);
            }
            r = parse_img(m, len, &i);
            check_result(r, all_fixtures[f], round);
            if (r == 0) {
                parsed++;
                assert_true(strlen(i.interp) <= ELF_INTERP_MAX);
            } else {
                rejected++;
            }
        }
    }
    /* Both outcomes happen: the sweep is reaching the checks, not bouncing off the magic. */
    assert_true(parsed > 100);
    assert_true(rejected > 100);
}

/* ---- files present in part (elfinfo_parse_chunks) ----------------------------------------- */

static bool chunk_is_set(const uint8_t *present, uint64_t i)
{
    return (present[i / 8] >> (i % 8)) & 1;
}

/*
 * Parses `buf` starting with no chunk present, loading the chunk each -EAGAIN names, as
 * elffile.c does. Each name must be an absent chunk inside the file; the end must be the
 * whole-buffer parse. Absent chunks hold other bytes than the file's, so a read of one would
 * change the result. Returns the number of chunks loaded.
 */
static size_t converge(const uint8_t *buf, size_t len, unsigned shift, const char *name)
{
    size_t bytes = (len >> shift) / 8 + 1, loaded = 0;
    _cleanup_free_ uint8_t *present = calloc(bytes, 1);
    _cleanup_free_ uint8_t *holey = malloc(len ? len : 1);
    assert_non_null(present);
    assert_non_null(holey);
    memset(holey, 0x5a, len);
    struct elf_info whole, part;
    struct cla_error e = {0};
    int want = elfinfo_parse(buf, len, &whole, &e);
    struct elf_chunks c = {.present = present, .shift = shift};
    for (;;) {
        uint64_t missing = UINT64_MAX;
        int r = elfinfo_parse_chunks(holey, len, &c, &part, &missing, &e);
        if (r != -EAGAIN) {
            if (r != want)
                fail_msg("%s (shift %u): %d after %zu chunks, whole %d", name, shift, r, loaded,
                         want);
            if (r == 0)
                assert_true(elfinfo_equal(&part, &whole));
            return loaded;
        }
        assert_true(missing < len);
        assert_int_equal(missing & ((1ULL << shift) - 1), 0);
        uint64_t i = missing >> shift;
        assert_false(chunk_is_set(present, i));
        present[i / 8] |= (uint8_t)(1u << (i % 8));
        size_t n = len - missing < (1ULL << shift) ? len - missing : 1ULL << shift;
        memcpy(holey + missing, buf + missing, n);
        loaded++;
    }
}

static void test_partial_fixtures(void **state)
{
    (void)state;
    for (size_t f = 0; f < ARRAY_SIZE(all_fixtures); f++) {
        size_t len;
        _cleanup_free_ uint8_t *buf = load(all_fixtures[f], &len);
        static const unsigned shifts[] = {0, 4, 6, 9, 12};
        for (size_t k = 0; k < ARRAY_SIZE(shifts); k++) {
            size_t loaded = converge(buf, len, shifts[k], all_fixtures[f]);
            /* The parser asks for headers and tables, not the code between them. */
            if (shifts[k] == 6)
                assert_true(loaded << 6 < len / 2);
        }
    }
    /* Every prefix of one, too: a file that ends in a chunk's middle. */
    size_t len;
    _cleanup_free_ uint8_t *buf = load("entry-gnu.so", &len);
    for (size_t n = 0; n <= len; n += 7)
        (void)converge(buf, n, 5, "entry-gnu.so prefix");
}

/* With one chunk absent, a parse either needs it (and says so) or gives the whole result. */
static void test_partial_one_hole(void **state)
{
    (void)state;
    for (size_t f = 0; f < ARRAY_SIZE(all_fixtures); f++) {
        size_t len;
        _cleanup_free_ uint8_t *buf = load(all_fixtures[f], &len);
        _cleanup_free_ uint8_t *holey = malloc(len);
        assert_non_null(holey);
        struct elf_info whole, part;
        struct cla_error e = {0};
        assert_int_equal(elfinfo_parse(buf, len, &whole, &e), 0);
        unsigned needed = 0;
        for (uint64_t hole = 0; hole <= len >> 6; hole++) {
            uint8_t present[(20 * 1024 >> 6) / 8 + 1];
            memset(present, 0xff, sizeof(present));
            present[hole / 8] &= (uint8_t) ~(1u << (hole % 8));
            memcpy(holey, buf, len);
            memset(holey + (hole << 6), 0xa5, len - (hole << 6) < 64 ? len - (hole << 6) : 64);
            struct elf_chunks c = {.present = present, .shift = 6};
            uint64_t missing = UINT64_MAX;
            int r = elfinfo_parse_chunks(holey, len, &c, &part, &missing, &e);
            if (r == -EAGAIN) {
                assert_int_equal(missing, hole << 6);
                needed++;
            } else {
                assert_int_equal(r, 0);
                assert_true(elfinfo_equal(&part, &whole));
            }
        }
        assert_true(needed >= 2); /* at least the ELF header and the dynamic section */
    }
}

/*
 * A real, large ELF file (this test's own executable) with every page the parser has not asked
 * for unreadable: a read of an absent chunk would fault, not just misparse. Only a few pages of
 * it are needed.
 */
static void test_partial_reads_no_absent_page(void **state)
{
    (void)state;
    _cleanup_close_ int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    _cleanup_free_ char *file = NULL;
    size_t len;
    assert_int_equal(util_read_all(fd, ELF_READ_MAX, &file, &len), 0);
    struct elf_info whole, part;
    struct cla_error e = {0};
    assert_int_equal(elfinfo_parse((const uint8_t *)file, len, &whole, &e), 0);

    size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = (len + page - 1) / page;
    unsigned shift = (unsigned)__builtin_ctzl(page);
    uint8_t *m = mmap(NULL, pages * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    _cleanup_free_ uint8_t *present = calloc(pages / 8 + 1, 1);
    assert_non_null(present);
    struct elf_chunks c = {.present = present, .shift = shift};
    size_t loaded = 0;
    int r;
    uint64_t missing;
    while ((r = elfinfo_parse_chunks(m, len, &c, &part, &missing, &e)) == -EAGAIN) {
        assert_false(chunk_is_set(present, missing >> shift));
        assert_int_equal(mprotect(m + missing, page, PROT_READ | PROT_WRITE), 0);
        memcpy(m + missing, file + missing, len - missing < page ? len - missing : page);
        present[(missing >> shift) / 8] |= (uint8_t)(1u << ((missing >> shift) % 8));
        loaded++;
    }
    assert_int_equal(r, 0);
    assert_true(elfinfo_equal(&part, &whole));
    assert_true(loaded <= 8);
    assert_true(loaded < pages);
    munmap(m, pages * page);
}

static void test_partial_bad_shift(void **state)
{
    (void)state;
    uint8_t present = 0xff, img[IMG_SIZE];
    struct elf_chunks c = {.present = &present, .shift = ELF_CHUNK_SHIFT_MAX + 1};
    struct elf_info i;
    uint64_t missing;
    build(&x64_so, img);
    assert_int_equal(elfinfo_parse_chunks(img, sizeof(img), &c, &i, &missing, NULL), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_glibc_so),
        cmocka_unit_test(test_fixture_musl_so),
        cmocka_unit_test(test_fixture_executables),
        cmocka_unit_test(test_fixture_lying_section_headers),
        cmocka_unit_test(test_fixture_truncated),
        cmocka_unit_test(test_built_baseline),
        cmocka_unit_test(test_built_soname),
        cmocka_unit_test(test_system_libstdcxx_soname),
        cmocka_unit_test(test_built_arm32_both_byte_orders),
        cmocka_unit_test(test_built_machines),
        cmocka_unit_test(test_built_libc_votes),
        cmocka_unit_test(test_built_pie_flag),
        cmocka_unit_test(test_not_elf),
        cmocka_unit_test(test_fixture_entry_gnu_hash),
        cmocka_unit_test(test_fixture_entry_sysv_hash),
        cmocka_unit_test(test_fixture_no_entry),
        cmocka_unit_test(test_malformed_headers),
        cmocka_unit_test(test_dynamic_without_null),
        cmocka_unit_test(test_too_many_needed),
        cmocka_unit_test(test_interp_malformed),
        cmocka_unit_test(test_repeated_segments),
        cmocka_unit_test(test_every_prefix),
        cmocka_unit_test(test_random_mutations),
        cmocka_unit_test(test_file_end),
        cmocka_unit_test(test_partial_fixtures),
        cmocka_unit_test(test_partial_one_hole),
        cmocka_unit_test(test_partial_reads_no_absent_page),
        cmocka_unit_test(test_partial_bad_shift),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
