/* SPDX-License-Identifier: Apache-2.0 */
/* Loading the profiler the operator gave (a file, a bundle with a build per RID, a directory,
 * or a file or tar stream on stdin) into a set of builds, and choosing the one for a RID. */
#include "profset/profset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/bounds.h"
#include "profset/elfinfo.h"
#include "profset/profdir_read.h"
#include "profset/profhome.h"
#include "profset/tarstream.h"
#include "profset/userfile.h"
#include "base/util.h"

/* Bundle subdirectories we look for, as portable RIDs. Linux only: a bundle's win-* or osx-*
 * builds could never load into a Linux target and are not read. PROFSET_MAX is their count. */
static const char *const variants[] = {
    "linux-x64", "linux-musl-x64", "linux-arm64", "linux-musl-arm64",
    "linux-arm", "linux-musl-arm", "linux-x86",   "linux-musl-x86",
};

/* One build per bundle variant at most: the set never outgrows PROFSET_MAX. */
_Static_assert(ARRAY_SIZE(variants) <= PROFSET_MAX, "a bundle names more builds than a set holds");

/* A new, zeroed build at the end of the set. It counts at once, so that profset_free() frees
 * what a failed read left in it. NULL when out of memory. */
static struct profset_build *add_build(struct profset *ps, struct cla_error *e)
{
    struct profset_build *nb = realloc(ps->builds, (ps->n + 1) * sizeof(*nb));
    if (!nb) {
        err_set(e, -ENOMEM, "out of memory");
        return NULL;
    }
    ps->builds = nb;
    memset(&nb[ps->n], 0, sizeof(nb[ps->n]));
    return &nb[ps->n++];
}

/* Checks a single file's bytes are a loadable shared object and takes them into `b`. */
static int take_single(uint8_t *buf, size_t len, const char *name, const char *shown,
                       struct profset_build *b, struct cla_error *e)
{
    struct cla_error pe = {0};
    int r = elfinfo_parse(buf, len, &b->elf, &pe);
    if (r < 0 || !b->elf.is_shared_object) {
        free(buf);
        /* The runtime dlopen()s the profiler: an ET_EXEC executable cannot be loaded that way,
         * so it is refused here rather than by an HRESULT from inside the target. */
        if (r == -ENOEXEC || r == 0)
            return err_set(e, -EINVAL, "profiler '%s' is not an ELF shared object%s", shown,
                           r == 0 ? " (an executable: the runtime cannot dlopen it)" : "");
        return err_set(e, -EINVAL, "profiler '%s' is a malformed ELF file: %s", shown, pe.msg);
    }
    b->data = buf;
    b->len = len;
    snprintf(b->name, sizeof(b->name), "%s", name);
    return 0;
}

/* A single file named on the command line. */
static int read_build(const char *path, struct profset_build *b, struct cla_error *e)
{
    /* A FIFO or a device here is refused, never waited on (userfile.h). */
    _cleanup_close_ int fd = userfile_open(AT_FDCWD, path, path, "--profiler", e);
    if (fd < 0) {
        if (fd == -ENXIO)
            err_hint(e, "pass the profiler's .so itself, or its directory");
        return fd;
    }
    char *buf;
    size_t len;
    int r = userfile_read_fd(fd, PROFILER_MAX_SIZE, &buf, &len);
    if (r == -E2BIG)
        return err_set(e, -EFBIG, "profiler '%s' is over %d bytes", path, PROFILER_MAX_SIZE);
    if (r < 0)
        return err_setsys(e, r, "read profiler '%s'", path);
    /* The base name is the stem of the name the file gets in the target. */
    const char *slash = strrchr(path, '/');
    return take_single((uint8_t *)buf, len, slash ? slash + 1 : path, path, b, e);
}

/* A directory build: the whole tree, read and its entry chosen (profdir_read.h). */
static int take_dir(struct profdir *pd, struct profset_build *b, struct cla_error *e)
{
    b->dir = malloc(sizeof(*b->dir));
    if (!b->dir) {
        profdir_free(pd);
        return err_set(e, -ENOMEM, "out of memory");
    }
    /* The profdir moves into the build (no copy of the bytes); the entry's ELF facts stand for
     * the build in the arch and libc check of profset_choose(). */
    *b->dir = *pd;
    b->elf = *b->dir->files[b->dir->entry].elf;
    return 0;
}

/* One build from directory `dfd`: a lone .so stays a single file (its name may change in the
 * target, as nothing beside it could look for it), anything more is a profiler directory. */
static int read_dir_build(int dfd, const char *entry, const char *shown, struct profset_build *b,
                          struct cla_error *e)
{
    struct profdir pd;
    int r = profdir_read(dfd, shown, entry, &pd, e);
    if (r < 0)
        return r;
    if (r == 0)
        return take_dir(&pd, b, e);
    /* The library's bytes, already read, leave the tree for a build of their own. */
    struct profdir_file *f = &pd.files[0];
    uint8_t *data = f->data;
    size_t len = f->len;
    f->data = NULL;
    char one[PROFDIR_PATH_MAX + 1];
    snprintf(one, sizeof(one), "%s", f->path);
    profdir_free(&pd);
    /* `shown` is a command-line path (up to PATH_MAX) plus a relative name. */
    char path[4400];
    snprintf(path, sizeof(path), "%s/%s", shown, one);
    return take_single(data, len, one, path, b, e);
}

/* Opens `rel` below `root` as a directory, or returns -ENOENT quietly. */
static int open_subdir(int root, const char *rel)
{
    /* O_DIRECTORY refuses anything else by type; O_NONBLOCK|O_NOCTTY keep even a swapped-in
     * FIFO or tty from blocking us or becoming our terminal. */
    int fd = openat(root, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    return fd < 0 ? -errno : fd;
}

static bool has_subdir(int root, const char *rel)
{
    int fd = open_subdir(root, rel);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

/* Does the directory `root` hold an entry that is not a RID folder (profhome.h)? Then its RID
 * folders stand beside what they need: a home. */
static bool beside_rid_folders(int root)
{
    int fd = openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        /* Unreadable: read as a bundle, whose reading then says what failed. */
        return false;
    }
    bool other = false;
    struct dirent *de;
    while (!other && (de = readdir(d)))
        other = strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
                !profhome_rid_folder(de->d_name);
    closedir(d);
    return other;
}

/* Which layout a directory has: per-RID builds under `prefix` with `suffix` ("runtimes/",
 * "/native" for a NuGet package), a home (RID folders beside other entries, read whole), or none
 * (a plain profiler directory). */
static const char *detect_layout(int root, const char **prefix, const char **suffix)
{
    /* Most specific first: a NuGet package's root (runtimes/<rid>/native), then a package's
     * runtimes/ itself (<rid>/native), then a bundle of <rid>/ directories. */
    char rel[128];
    for (size_t i = 0; i < ARRAY_SIZE(variants); i++) {
        snprintf(rel, sizeof(rel), "runtimes/%s/native", variants[i]);
        if (has_subdir(root, rel)) {
            *prefix = "runtimes/", *suffix = "/native";
            return "nuget";
        }
    }
    for (size_t i = 0; i < ARRAY_SIZE(variants); i++) {
        snprintf(rel, sizeof(rel), "%s/native", variants[i]);
        if (has_subdir(root, rel)) {
            *prefix = "", *suffix = "/native";
            return "nuget";
        }
    }
    for (size_t i = 0; i < ARRAY_SIZE(variants); i++)
        if (has_subdir(root, variants[i])) {
            *prefix = "", *suffix = "";
            return beside_rid_folders(root) ? "home" : "bundle";
        }
    return "directory";
}

/* The builds of a home, one per Linux RID folder, each the whole tree `pd` with that folder's
 * entry (`want`: a bare name, or NULL). The first build owns the tree, the others share it
 * (dir_shared). On failure `pd` is freed, or owned by the set. */
static int home_per_rid(struct profdir *pd, const char *want, const char *shown, struct profset *ps,
                        struct cla_error *e)
{
    ps->bundle = true;
    for (size_t i = 0; i < ARRAY_SIZE(variants); i++) {
        if (!profhome_has_folder(pd, variants[i]))
            continue;
        struct cla_error me = {0};
        int r = profhome_choose_entry(pd, variants[i], want, shown, &me);
        /* A bare --entry absent from this folder: this RID has no build. */
        if (r == -ENOENT)
            continue;
        if (r < 0) {
            if (ps->n == 0)
                profdir_free(pd);
            *e = me;
            return r;
        }
        struct profset_build *b = add_build(ps, e);
        if (!b) {
            /* Until a build holds the tree, it is ours to free. */
            if (ps->n == 0)
                profdir_free(pd);
            return -ENOMEM;
        }
        snprintf(b->variant, sizeof(b->variant), "%s", variants[i]);
        if (ps->n == 1) {
            if ((r = take_dir(pd, b, e)) < 0)
                return r;
            continue;
        }
        if (!(b->dir = malloc(sizeof(*b->dir))))
            return err_set(e, -ENOMEM, "out of memory");
        *b->dir = *ps->builds[0].dir;
        b->dir->entry = pd->entry;
        b->dir_shared = true;
        b->elf = *b->dir->files[b->dir->entry].elf;
    }
    if (ps->n > 0)
        return 0;
    profdir_free(pd);
    if (!want)
        return err_set(e, -EINVAL, "the home %s has no file in its Linux RID folders", shown);
    err_set(e, -EINVAL, "--entry '%s' is in none of the RID folders of the home %s", want, shown);
    return err_hint(e, "name it by its path relative to %s (e.g. linux-x64/%s)", shown, want);
}

/* A home (profhome.h): the whole tree below `root`, delivered as it is. Its entry is --entry when
 * that is a path in the tree (one build for every RID), else per RID folder (home_per_rid). */
static int load_home(int root, const char *path, const char *entry, struct profset *ps,
                     struct cla_error *e)
{
    char want[PROFDIR_PATH_MAX + 1];
    int r;
    if (entry && (r = profdir_entry_path(entry, path, want, e)) < 0)
        return r;
    struct profdir pd;
    if ((r = profdir_read_tree(root, path, &pd, e)) < 0)
        return r;
    bool bare = entry && !strchr(want, '/');
    for (size_t i = 0; bare && i < pd.n; i++)
        bare = strcmp(pd.files[i].path, want) != 0;
    if (!entry || bare)
        return home_per_rid(&pd, entry ? want : NULL, path, ps, e);
    /* A path inside the home: the operator's choice for any RID, checked against the target's
     * machine and libc as a single build is (profset_choose). */
    if ((r = profdir_choose_entry(&pd, want, path, e)) < 0) {
        profdir_free(&pd);
        return r;
    }
    struct profset_build *b = add_build(ps, e);
    if (!b) {
        profdir_free(&pd);
        return -ENOMEM;
    }
    const char *slash = strchr(want, '/');
    if (slash && (size_t)(slash - want) < sizeof(b->variant))
        snprintf(b->variant, sizeof(b->variant), "%.*s", (int)(slash - want), want);
    if (!profhome_rid_folder(b->variant))
        b->variant[0] = '\0';
    return take_dir(&pd, b, e);
}

static int load_dir(const char *path, const char *entry, struct profset *ps, struct cla_error *e)
{
    /* The path is resolved once; everything below is read relative to this fd, so a rename of
     * the path while we read cannot mix two trees. */
    _cleanup_close_ int root = open_subdir(AT_FDCWD, path);
    if (root < 0)
        return err_setsys(e, root, "profiler directory '%s'", path);
    const char *prefix = "", *suffix = "";
    ps->layout = detect_layout(root, &prefix, &suffix);
    if (strcmp(ps->layout, "home") == 0)
        return load_home(root, path, entry, ps, e);
    if (strcmp(ps->layout, "directory") == 0) {
        struct profset_build *b = add_build(ps, e);
        return b ? read_dir_build(root, entry, path, b, e) : -ENOMEM;
    }
    /* Every Linux build is read now: which one the target needs is known only once its runtime
     * has been asked (profset_choose()), and a broken build is reported whichever it is. */
    ps->bundle = true;
    for (size_t i = 0; i < ARRAY_SIZE(variants); i++) {
        char rel[128], shown[4400];
        snprintf(rel, sizeof(rel), "%s%s%s", prefix, variants[i], suffix);
        _cleanup_close_ int sub = open_subdir(root, rel);
        if (sub < 0)
            continue;
        snprintf(shown, sizeof(shown), "%s/%s", path, rel);
        struct profset_build *b = add_build(ps, e);
        if (!b)
            return -ENOMEM;
        int r = read_dir_build(sub, entry, shown, b, e);
        if (r < 0)
            return r;
        snprintf(b->variant, sizeof(b->variant), "%s", variants[i]);
    }
    if (ps->n == 0)
        return err_set(e, -EINVAL, "profiler bundle '%s' has no build for Linux", path);
    return 0;
}

int profset_load(const char *path, const char *entry, struct profset *ret, struct cla_error *e)
{
    struct profset ps = {0};
    if (strcmp(path, "-") == 0)
        return profset_load_fd(STDIN_FILENO, entry, ret, e);
    struct stat st;
    if (stat(path, &st) < 0)
        return err_setsys(e, -errno, "profiler '%s'", path);
    int r;
    if (S_ISDIR(st.st_mode)) {
        r = load_dir(path, entry, &ps, e);
    } else {
        /* Refused rather than ignored: the operator meant some library that is not this one. */
        if (entry) {
            err_set(e, -EINVAL, "--entry '%s' given with a single profiler file '%s'", entry, path);
            return err_hint(e, "--entry chooses a library inside a profiler directory; pass the "
                               "directory, or drop --entry");
        }
        ps.layout = "file";
        struct profset_build *b = add_build(&ps, e);
        r = b ? read_build(path, b, e) : -ENOMEM;
    }
    if (r < 0) {
        profset_free(&ps);
        return r;
    }
    *ret = ps;
    return 0;
}

/* Reads off (and drops) what is already waiting on `fd`, up to `max` bytes, without blocking. */
static void drain_ready(int fd, size_t max)
{
    char junk[4096];
    struct pollfd p = {.fd = fd, .events = POLLIN};
    for (size_t got = 0; got < max && poll(&p, 1, 0) == 1 && (p.revents & POLLIN);) {
        size_t want = max - got < sizeof(junk) ? max - got : sizeof(junk);
        ssize_t n = read(fd, junk, want);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
}

/* Has stdin delivered a whole object? An ELF file is whole at the end its headers give, a tar
 * stream after its end-of-archive blocks; bytes that are neither are refused as soon as a tar
 * header's worth shows it, and headers too broken to tell an end leave the parser to refuse
 * them. */
static bool stdin_complete(const uint8_t *buf, size_t len, struct tar_end *tar)
{
    if (len >= 4 && memcmp(buf, "\177ELF", 4) == 0) {
        uint64_t end;
        int r = elfinfo_file_end(buf, len, &end);
        return r < 0 || (r == 1 && len >= end);
    }
    if (len < TAR_BLOCK)
        return false;
    return !tar_detect(buf, len) || tar_find_end(buf, len, tar) != 0;
}

/* util_read_until()'s `done` for stdin: stops at the end of the object it holds, never waiting
 * for an EOF past it (a `kubectl debug -i` container's stdin stays open after kubectl's input
 * ends). A tar writer's zero padding after the end, already in the pipe, is read off so that it
 * does not meet a closed pipe. */
struct stdin_read {
    int fd;
    struct tar_end tar;
};

static bool stdin_done(const char *buf, size_t len, void *arg)
{
    struct stdin_read *s = arg;
    if (!stdin_complete((const uint8_t *)buf, len, &s->tar))
        return false;
    if (s->tar.zero_seen)
        drain_ready(s->fd, TAR_RECORD);
    return true;
}

int profset_load_fd(int fd, const char *entry, struct profset *ret, struct cla_error *e)
{
    struct profset ps = {.layout = "stdin"};
    struct profset_build *b = add_build(&ps, e);
    if (!b)
        return -ENOMEM;
    char *buf = NULL;
    size_t len = 0;
    /* Read whole, capped: both decoders (ELF, tar) work on a buffer, and what stdin holds is
     * known only from its first bytes. */
    struct stdin_read sr = {.fd = fd};
    int r = util_read_until(fd, PROFILER_MAX_SIZE, stdin_done, &sr, &buf, &len);
    if (r < 0) {
        profset_free(&ps);
        if (r == -E2BIG)
            return err_set(e, -EFBIG, "the profiler on stdin is over %d bytes", PROFILER_MAX_SIZE);
        return err_setsys(e, r, "read the profiler from stdin");
    }
    if (len >= 4 && memcmp(buf, "\177ELF", 4) == 0) {
        if (entry) {
            free(buf);
            profset_free(&ps);
            return err_set(e, -EINVAL, "--entry '%s' given with a single .so on stdin", entry);
        }
        /* stdin has no file name: "profiler.so" is the stem of its name in the target. */
        r = take_single((uint8_t *)buf, len, "profiler.so", "stdin", b, e);
    } else if (tar_detect((const uint8_t *)buf, len)) {
        struct profdir pd;
        /* The tree holds copies of the file bytes, so the stream goes at once. */
        r = profdir_read_tar((const uint8_t *)buf, len, entry, "the tar stream on stdin", &pd, e);
        free(buf);
        if (r == 0)
            r = take_dir(&pd, b, e);
    } else {
        free(buf);
        r = err_set(e, -EINVAL,
                    "stdin holds %zu bytes that are neither an ELF shared object nor "
                    "a tar stream",
                    len);
        err_hint(e, "pipe the profiler's .so, or `tar -C DIR -c .` of its directory");
    }
    if (r < 0) {
        profset_free(&ps);
        return r;
    }
    *ret = ps;
    return 0;
}

void profset_free(struct profset *ps)
{
    for (size_t i = 0; i < ps->n; i++) {
        free(ps->builds[i].data);
        /* A home's other builds share the first one's tree: only their own struct is theirs. */
        if (ps->builds[i].dir && !ps->builds[i].dir_shared)
            profdir_free(ps->builds[i].dir);
        free(ps->builds[i].dir);
    }
    /* `layout` is a static string and stays; reset so that a second free is harmless. */
    free(ps->builds);
    ps->builds = NULL;
    ps->n = 0;
}

int profset_choose(const struct profset *ps, const struct rid *rid,
                   const struct profset_build **ret, struct cla_error *e)
{
    if (!ps->bundle) {
        const struct profset_build *b = &ps->builds[0];
        /* Only a known mismatch refuses: the RID may be unknown (a runtime older than .NET 8
         * has no ProcessInfo3), and a library's libc is not always visible. A wrong build would
         * earn only a nameless 0x8007007E from the runtime. */
        bool arch_bad = rid->arch != RID_ARCH_UNKNOWN && b->elf.arch != rid->arch;
        bool libc_bad = rid->libc != RID_LIBC_UNKNOWN && b->elf.libc != RID_LIBC_UNKNOWN &&
                        b->elf.libc != rid->libc;
        if (arch_bad || libc_bad) {
            err_set(e, -EXDEV,
                    "the profiler is built for %s/%s but the target runs %s/%s: the runtime "
                    "could not load it",
                    rid_arch_name(b->elf.arch), rid_libc_name(b->elf.libc),
                    rid_arch_name(rid->arch), rid_libc_name(rid->libc));
            return err_hint(e,
                            "use a %s build of the profiler, or a bundle directory with a "
                            "%s/ subdirectory (a NuGet package's runtimes/<rid>/native/ works too)",
                            rid->portable[0] ? rid->portable : "matching",
                            rid->portable[0] ? rid->portable : "<rid>");
        }
        *ret = b;
        return 0;
    }
    const char *names[4];
    size_t n = rid->portable[0] ? rid_bundle_names(rid, names, ARRAY_SIZE(names)) : 0;
    /* The target's preferences in order (rid_bundle_names: most specific first, never a glibc
     * build for musl), each matched against the builds the bundle has. */
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < ps->n; k++)
            if (strcmp(ps->builds[k].variant, names[i]) == 0) {
                *ret = &ps->builds[k];
                return 0;
            }
    char have[160] = "";
    size_t used = 0;
    for (size_t k = 0; k < ps->n && used < sizeof(have); k++) {
        int w = snprintf(have + used, sizeof(have) - used, "%s%s", k ? ", " : "",
                         ps->builds[k].variant);
        if (w > 0)
            used += (size_t)w;
    }
    if (!rid->portable[0]) {
        err_set(e, -ENOENT,
                "the target's runtime identifier is unknown, so no build of the "
                "bundle (%s) can be chosen",
                have);
        return err_hint(e, "pass --rid (for example --rid linux-musl-x64)");
    }
    err_set(e, -ENOENT, "the %s has no build for %s (it has: %s)", ps->layout, rid->portable, have);
    return err_hint(e, "add a %s/ %s with that build of the profiler", rid->portable,
                    strcmp(ps->layout, "home") == 0 ? "folder to the home" : "subdirectory");
}
