/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The target's RID: --rid first (refused when it is not a Linux RID, or when it contradicts the
 * runtime's own answer without --force-rid), then the runtime's answer, else the guess from the
 * loader in its maps and the ELF machine of its runtime library or executable. Directories
 * stand in for /proc/<pid> (maps, exe) and for the target's root (its libcoreclr.so).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profset/target_rid.h"
#include "shell.h"
#include "target/target.h"

static char base[64];

static const char loader_musl[] = "7f00-7f01 r-xp 00000000 fe:00 11 /lib/ld-musl-x86_64.so.1\n";
static const char loader_glibc[] = "7f00-7f01 r-xp 00000000 fe:00 11 /lib64/ld-linux-x86-64.so.2\n";
static const char coreclr[] =
    "7f02-7f03 r-xp 00000000 fe:00 12 /usr/share/dotnet/shared/libcoreclr.so\n";

/* A 64-bit little-endian ELF of `machine` with one PT_LOAD, and a PT_INTERP when `interp`. */
static void write_elf(const char *rel, uint16_t machine, const char *interp)
{
    struct {
        Elf64_Ehdr h;
        Elf64_Phdr p[2];
        char interp[64];
    } img;
    memset(&img, 0, sizeof(img));
    memcpy(img.h.e_ident, ELFMAG, SELFMAG);
    img.h.e_ident[EI_CLASS] = ELFCLASS64;
    img.h.e_ident[EI_DATA] = ELFDATA2LSB;
    img.h.e_ident[EI_VERSION] = EV_CURRENT;
    img.h.e_type = ET_DYN;
    img.h.e_machine = machine;
    img.h.e_version = EV_CURRENT;
    img.h.e_phoff = offsetof(__typeof__(img), p);
    img.h.e_ehsize = sizeof(Elf64_Ehdr);
    img.h.e_phentsize = sizeof(Elf64_Phdr);
    img.h.e_phnum = 1;
    img.p[0] = (Elf64_Phdr){.p_type = PT_LOAD,
                            .p_flags = PF_R,
                            .p_filesz = sizeof(img),
                            .p_memsz = sizeof(img),
                            .p_align = 0x1000};
    if (interp) {
        snprintf(img.interp, sizeof(img.interp), "%s", interp);
        img.p[1] = (Elf64_Phdr){.p_type = PT_INTERP,
                                .p_flags = PF_R,
                                .p_offset = offsetof(__typeof__(img), interp),
                                .p_vaddr = offsetof(__typeof__(img), interp),
                                .p_filesz = strlen(interp) + 1,
                                .p_memsz = strlen(interp) + 1,
                                .p_align = 1};
        img.h.e_phnum = 2;
    }
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", base, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(&img, sizeof(img), 1, f), 1);
    fclose(f);
}

static void write_maps(const char *a, const char *b)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/proc/maps", base);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(a, f);
    fputs(b, f);
    fclose(f);
}

static struct target fake_target(void)
{
    char path[256];
    struct target t = {.pid = 4242, .pidfd = -1};
    snprintf(path, sizeof(path), "%s/proc", base);
    t.procfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    snprintf(path, sizeof(path), "%s/root", base);
    t.rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(t.procfd >= 0 && t.rootfd >= 0);
    return t;
}

static int setup(void **state)
{
    (void)state;
    snprintf(base, sizeof(base), "/tmp/clrattach-rid.XXXXXX");
    assert_non_null(mkdtemp(base));
    sh("mkdir -p '%s/proc' '%s/root/usr/share/dotnet/shared'", base, base);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sh("rm -rf '%s'", base);
    return 0;
}

static int detect(struct target *t, const char *option, bool force, const char *runtime,
                  struct rid *ret, enum target_rid_source *src, struct cla_error *e)
{
    struct target_rid_input in = {.option = option, .force = force, .runtime_rid = runtime};
    err_clear(e);
    return target_rid_detect(t, &in, ret, src, e);
}

/* --rid: taken when it names a Linux RID and agrees with the runtime (or the runtime said
 * nothing usable, or --force-rid); else refused with the way out. Nothing is read from the
 * target: its /proc stand-in holds neither maps nor exe. */
static void test_option(void **state)
{
    (void)state;
    struct target t = fake_target();
    struct rid r;
    enum target_rid_source src = TARGET_RID_MAPS_EXE;
    struct cla_error e;

    assert_int_equal(detect(&t, "linux-musl-x64", false, "", &r, &src, &e), 0);
    assert_int_equal(src, TARGET_RID_OPTION);
    assert_string_equal(r.portable, "linux-musl-x64");
    assert_int_equal(detect(&t, "linux-x64", false, "ubuntu.22.04-x64", &r, &src, &e), 0);
    assert_string_equal(r.portable, "linux-x64");
    /* A runtime answer that is no Linux RID contradicts nothing. */
    assert_int_equal(detect(&t, "linux-x64", false, "win10-x64", &r, &src, &e), 0);
    assert_string_equal(r.portable, "linux-x64");

    assert_int_equal(detect(&t, "osx-x64", false, "", &r, &src, &e), -EINVAL);
    assert_string_equal(e.msg, "--rid 'osx-x64' is not a Linux runtime identifier");
    assert_non_null(strstr(e.hint, "linux-musl-x64"));

    assert_int_equal(detect(&t, "linux-musl-x64", false, "linux-x64", &r, &src, &e), -EINVAL);
    assert_string_equal(e.msg, "--rid linux-musl-x64 contradicts the runtime's own answer: it "
                               "runs linux-x64 (linux-x64)");
    assert_non_null(strstr(e.hint, "--force-rid"));
    src = TARGET_RID_MAPS_EXE;
    assert_int_equal(detect(&t, "linux-musl-x64", true, "linux-x64", &r, &src, &e), 0);
    assert_int_equal(src, TARGET_RID_OPTION);
    assert_string_equal(r.portable, "linux-musl-x64");
    /* No error struct wanted: the code alone. */
    struct target_rid_input in = {.option = "osx-x64"};
    assert_int_equal(target_rid_detect(&t, &in, &r, &src, NULL), -EINVAL);
    assert_null(t.maps.buf);
    target_close(&t);
}

/* The runtime's answer, normalised; an answer that is not a Linux RID (or none) is no answer. */
static void test_runtime_answer(void **state)
{
    (void)state;
    struct target t = fake_target();
    struct rid r;
    enum target_rid_source src = TARGET_RID_MAPS_EXE;
    struct cla_error e;
    assert_int_equal(detect(&t, NULL, false, "alpine.3.17-arm64", &r, &src, &e), 0);
    assert_int_equal(src, TARGET_RID_RUNTIME);
    assert_string_equal(r.portable, "linux-musl-arm64");
    assert_int_equal(detect(&t, NULL, false, NULL, &r, &src, &e), 0);
    assert_int_equal(src, TARGET_RID_MAPS_EXE);
    assert_int_equal(detect(&t, NULL, false, "win10-x64", &r, &src, &e), 0);
    assert_int_equal(src, TARGET_RID_MAPS_EXE);
    target_close(&t);
}

/* The guess: the loader in the maps says the C library (else the executable's PT_INTERP does),
 * the runtime library's ELF machine the architecture (an emulator's exe is of the host's), else
 * the executable's. */
static void test_guess(void **state)
{
    (void)state;
    struct target t = fake_target();
    struct rid r;
    enum target_rid_source src;
    struct cla_error e;

    /* Nothing readable: a RID of unknown parts, for the build choice to refuse. */
    assert_int_equal(detect(&t, NULL, false, "", &r, &src, &e), 0);
    assert_int_equal(src, TARGET_RID_MAPS_EXE);
    assert_string_equal(r.portable, "");
    target_maps_drop(&t);

    write_maps(loader_musl, "");
    write_elf("proc/exe", EM_X86_64, NULL);
    assert_int_equal(detect(&t, NULL, false, "", &r, &src, &e), 0);
    assert_string_equal(r.portable, "linux-musl-x64");
    assert_non_null(t.maps.buf); /* the snapshot stays for the dependency check */
    target_maps_drop(&t);

    /* qemu-user: the exe is the x64 emulator, the mapped runtime is arm64. */
    write_maps(loader_musl, coreclr);
    write_elf("root/usr/share/dotnet/shared/libcoreclr.so", EM_AARCH64, NULL);
    assert_int_equal(detect(&t, NULL, false, "", &r, &src, &e), 0);
    assert_string_equal(r.portable, "linux-musl-arm64");
    target_maps_drop(&t);

    /* The maps' loader before the executable's interpreter; the interpreter when the maps name
     * no loader. */
    write_elf("proc/exe", EM_AARCH64, "/lib/ld-musl-aarch64.so.1");
    write_maps(loader_glibc, "");
    assert_int_equal(detect(&t, NULL, false, "", &r, &src, &e), 0);
    assert_string_equal(r.portable, "linux-arm64");
    target_maps_drop(&t);
    write_maps("", "");
    assert_int_equal(detect(&t, NULL, false, "", &r, &src, &e), 0);
    assert_string_equal(r.portable, "linux-musl-arm64");
    target_close(&t);
}

/* Bytes this process has read so far (read, pread: /proc/self/io's rchar). */
static unsigned long long bytes_read_so_far(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    assert_non_null(f);
    char line[128];
    unsigned long long v = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "rchar: %llu", &v) == 1)
            break;
    fclose(f);
    return v;
}

/* The executable and the runtime library are the target's files, of a size it chooses: only the
 * pages their headers need are read, not the (sparse) 60 MiB after them. */
static void test_guess_reads_headers_only(void **state)
{
    (void)state;
    struct target t = fake_target();
    struct rid r;
    enum target_rid_source src;
    struct cla_error e;
    write_maps(loader_musl, coreclr);
    write_elf("proc/exe", EM_X86_64, NULL);
    write_elf("root/usr/share/dotnet/shared/libcoreclr.so", EM_AARCH64, NULL);
    sh("truncate -s 60M '%s/proc/exe' '%s/root/usr/share/dotnet/shared/libcoreclr.so'", base, base);
    unsigned long long before = bytes_read_so_far();
    assert_int_equal(detect(&t, NULL, false, "", &r, &src, &e), 0);
    unsigned long long read = bytes_read_so_far() - before;
    assert_string_equal(r.portable, "linux-musl-arm64");
    /* the (small) maps and a few pages of each file: far from either file's 60 MiB */
    assert_true(read < 1024 * 1024);
    target_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_option),
        cmocka_unit_test(test_runtime_answer),
        cmocka_unit_test(test_guess),
        cmocka_unit_test(test_guess_reads_headers_only),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
