/* SPDX-License-Identifier: Apache-2.0 */
/* Every library the profiler needs, looked for as the target's loader would: its directories
 * below the target's root, the libraries it has mapped, and a miss told with what was checked. */
#include "profset/depcheck.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profset/elffile.h"
#include "profset/ldsearch.h"
#include "target/proc_maps.h"
#include "base/render.h"
#include "target/rootfs.h"
#include "base/util.h"

/* Caps on what the target's text can make us hold: its maps list every mapped file and its
 * musl path file is its own. A process with more than MAPPED_MAX libraries is checked against
 * the first ones only; a miss then still names the library, and can be skipped. */
#define MAPPED_MAX    256
#define MAPPED_BUF    (64 * 1024)
#define MUSL_PATH_MAX 4096

static const char *base_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* A mapped path the kernel marked " (deleted)": the file is unlinked, the loader still holds it
 * (proc_maps_loaded()). */
static bool is_deleted(const char *path)
{
    size_t n = strlen(path);
    return n > 10 && strcmp(path + n - 10, " (deleted)") == 0;
}

/* Is the base name of the mapped `path`, " (deleted)" left off, `name`? */
static bool base_is(const char *path, const char *name)
{
    const char *base = base_of(path);
    size_t n = strlen(base) - (is_deleted(path) ? 10 : 0);
    return strlen(name) == n && memcmp(base, name, n) == 0;
}

/* Is the mapped `path`'s base name `name` followed by a version (".6.0.30" after
 * "libstdc++.so.6"): the file behind the link the loader opened, as libraries are installed
 * (the real name, whose SONAME is the link's name). */
static bool base_versions(const char *path, const char *name)
{
    const char *base = base_of(path);
    size_t n = strlen(name), end = strlen(base) - (is_deleted(path) ? 10 : 0);
    if (end <= n + 1 || strncmp(base, name, n) != 0)
        return false;
    for (size_t i = n; i < end; i++) {
        bool dot = base[i] == '.';
        if (!dot && (base[i] < '0' || base[i] > '9'))
            return false;
        /* ".", then digits: no empty part, none at the end. */
        if (dot && (i + 1 == end || base[i + 1] == '.'))
            return false;
    }
    return base[n] == '.';
}

/* Does a regular file exist at `path` in the target's root? Links inside the root are followed
 * (shared libraries are links to versioned files), with or without openat2. */
static bool exists_in_root(int rootfd, const char *path)
{
    /* O_PATH: the file is never read or opened for I/O, so a FIFO or device planted in a
     * library directory cannot block us; the type is still checked on what the path reaches. */
    int fd = rootfs_open_contained(rootfd, path, ROOTFS_REG, O_PATH, NULL);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

/* Names the loader resolves to itself: musl's libc under its several names. */
static bool loader_builtin(enum rid_libc libc, const char *name)
{
    return libc == RID_LIBC_MUSL &&
           (strcmp(name, "libc.so") == 0 || strncmp(name, "libc.musl-", 10) == 0 ||
            strncmp(name, "ld-musl-", 8) == 0);
}

struct ctx {
    const struct depcheck_input *in;
    char *mapped; /* packed paths of mapped libraries; NULL until the maps were asked for */
    size_t n_mapped;
    bool mapped_tried;
    const char *maps; /* the maps text they came from, for their map_files names */
    size_t maps_len;
    /* The DT_SONAME of the first n_sonames mapped files, ELF_SONAME_MAX + 2 bytes each ("" for
     * none or unreadable; the last byte 1 when the file could not be read at all), read on first
     * need and within the caps of bounds.h. */
    char *sonames;
    size_t n_sonames;
    uint64_t soname_bytes;
    char *musl_path;
    size_t musl_path_len;
    /* The first name found in none of the places checked while some were past the caps: not
     * a miss (it may be in what was not checked), told to the caller as "not checked". */
    char *note;
    size_t note_size;
    bool unchecked;
};

/* The mapped libraries, from the target's maps asked for on first use. -ENOMEM, else 0 (maps
 * that cannot be read leave the list empty: nothing counts as mapped). */
static int load_mapped(struct ctx *c)
{
    if (c->mapped_tried)
        return c->mapped ? 0 : -ENOMEM;
    c->mapped_tried = true;
    c->mapped = malloc(MAPPED_BUF);
    if (!c->mapped)
        return -ENOMEM;
    size_t len = 0;
    const char *maps = c->in->maps ? c->in->maps(c->in->maps_arg, &len) : NULL;
    /* Unlinked ones too: the loader reuses what it holds by name, whatever became of the file. */
    c->n_mapped = maps ? proc_maps_loaded(maps, len, c->mapped, MAPPED_BUF, MAPPED_MAX) : 0;
    c->maps = maps;
    c->maps_len = maps ? len : 0;
    return 0;
}

/* Opens the mapped file at `path` for reading: through /proc/<pid>/map_files/, which reaches
 * the very inode mapped whatever the target's mounts show under its path now (a file replaced,
 * hidden or overmounted after start), else by its path in the target's root. Only a regular
 * file is opened for reading (a device can be mapped too, and opening one can act). -1 when
 * neither works. */
static int open_mapped(const struct ctx *c, const char *path)
{
    char name[64], at[80];
    if (c->in->procfd >= 0 &&
        proc_maps_map_files_name(c->maps, c->maps_len, path, name, sizeof(name))) {
        snprintf(at, sizeof(at), "map_files/%s", name);
        /* The entry is a magic link to the mapped file: followed, as the kernel resolves it to
         * that inode and no name of the target's is walked. The kernel asks CAP_SYS_ADMIN (or
         * CAP_CHECKPOINT_RESTORE) of the opener, which the sandbox does not keep (docs/security.md,
         * Capabilities): under it this answers EPERM and the root path is the way; without the
         * sandbox (--seccomp=off) it reaches files the root no longer shows. */
        _cleanup_close_ int pin = openat(c->in->procfd, at, O_PATH | O_CLOEXEC);
        struct stat st;
        if (pin >= 0 && fstat(pin, &st) == 0 && S_ISREG(st.st_mode)) {
            char self[40];
            snprintf(self, sizeof(self), "/proc/self/fd/%d", pin);
            int fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
            if (fd >= 0)
                return fd;
        }
    }
    /* An unlinked file has no name left to open (one ending in " (deleted)" is another file). */
    if (is_deleted(path))
        return -1;
    /* maps shows the path resolved when it was mapped; links inside the root are still followed
     * (contained in it), as the path may have been replaced by one since. */
    return rootfs_open_contained(c->in->rootfd, path, ROOTFS_REG, O_RDONLY, NULL);
}

/* The SONAME of the i-th mapped file (i < n_mapped), "" when it has none, cannot be read or is
 * past the caps (bounds.h); *ret_unread true when the file could not be opened or parsed at all.
 * -ENOMEM, else 0. Only the chunks of the file its headers need are read (elffile.h): the target
 * chooses every library's size. */
static int mapped_soname(struct ctx *c, size_t i, const char *path, const char **ret,
                         bool *ret_unread)
{
    if (!c->sonames) {
        size_t n =
            c->n_mapped < DEPCHECK_SONAME_FILES_MAX ? c->n_mapped : DEPCHECK_SONAME_FILES_MAX;
        c->sonames = calloc(n ? n : 1, ELF_SONAME_MAX + 2);
        if (!c->sonames)
            return -ENOMEM;
    }
    *ret = "";
    *ret_unread = false;
    if (i >= DEPCHECK_SONAME_FILES_MAX)
        return 0;
    char *slot = c->sonames + i * (ELF_SONAME_MAX + 2);
    *ret = slot;
    if (i < c->n_sonames) {
        *ret_unread = slot[ELF_SONAME_MAX + 1];
        return 0;
    }
    /* Read in map order, each once: i == n_sonames here, as the callers walk from 0. */
    c->n_sonames = i + 1;
    if (c->soname_bytes >= DEPCHECK_SONAME_BYTES_MAX)
        return 0;
    _cleanup_close_ int fd = open_mapped(c, path);
    if (fd < 0) {
        slot[ELF_SONAME_MAX + 1] = 1;
        *ret_unread = true;
        return 0;
    }
    uint64_t room = DEPCHECK_SONAME_BYTES_MAX - c->soname_bytes;
    struct elffile_limits lim = {
        .max_bytes = room < DEPCHECK_SONAME_FILE_BYTES ? room : DEPCHECK_SONAME_FILE_BYTES,
    };
    struct elffile_stats st;
    /* On the heap: its DT_NEEDED and run path buffers make it over 5 KiB. */
    struct elf_info *ei = malloc(sizeof(*ei));
    if (!ei)
        return -ENOMEM;
    int r = elffile_parse(fd, &lim, ei, &st, NULL);
    c->soname_bytes += st.bytes_read;
    if (r == 0)
        memcpy(slot, ei->soname, strlen(ei->soname) + 1);
    else
        slot[ELF_SONAME_MAX + 1] = 1;
    *ret_unread = r != 0;
    free(ei);
    return 0;
}

/*
 * A library already loaded is not looked for again: the loader matches a DT_NEEDED name against
 * the objects it has loaded. The directories are tried before this (resolve): found there or
 * loaded, the loader is satisfied either way. Returns 1 when loaded, 0, or -ENOMEM.
 *
 * glibc (elf/dl-load.c, _dl_map_object) reuses a loaded object whose names include the needed
 * one, and failing that one whose DT_SONAME equals it: libstdc++.so.6 is the loaded
 * libstdc++.so.6.0.30, although maps show only the latter (the kernel resolves the link the
 * loader opened). So a mapped file counts by its base name or by its SONAME. A mapped file that
 * cannot be read at all (unlinked, its path hidden or overmounted after start, while the sandbox
 * keeps /proc/<pid>/map_files shut) counts when its name is the needed one followed by a version
 * (libstdc++.so.6.0.30 for libstdc++.so.6): the real name installed behind the SONAME's link.
 * Unlinked files count as the loader still holds them (proc_maps_loaded()).
 *
 * musl never reads DT_SONAME: its load_library (ldso/dynlink.c; read in the bminor/musl mirror at
 * 039d3c34f2e3) reuses a loaded DSO
 * when its `shortname`, the last component of the path its search opened (the needed name
 * itself), equals the name, or when the file a search finds is one loaded (same st_dev and
 * st_ino). The second case is the directories' lookup; for the first, what maps show is the
 * file behind any link, so only the base name is matched on musl.
 */
static int mapped_by_name(struct ctx *c, const char *name)
{
    const char *p = c->mapped;
    for (size_t i = 0; i < c->n_mapped; i++, p += strlen(p) + 1)
        if (base_is(p, name))
            return 1;
    if (c->in->libc == RID_LIBC_MUSL)
        return 0;
    p = c->mapped;
    for (size_t i = 0; i < c->n_mapped && i < DEPCHECK_SONAME_FILES_MAX; i++, p += strlen(p) + 1) {
        const char *soname;
        bool unread;
        if (mapped_soname(c, i, p, &soname, &unread) < 0)
            return -ENOMEM;
        if (strcmp(soname, name) == 0 || (unread && base_versions(p, name)))
            return 1;
    }
    return 0;
}

/* Appends " dir," entries to a message buffer while it has room. */
static void note_dir(char *out, size_t size, size_t *used, const char *dir)
{
    if (*used >= size)
        return;
    int w = snprintf(out + *used, size - *used, "%s%s", *used ? ", " : "", dir);
    *used = w < 0 ? size : *used + (size_t)w;
}

/* The miss of `name`, which `who` needs, told with the places looked in (`looked`, `cut` when
 * that list was cut short). Past the caps some directories were never looked in: the miss is told
 * as what it is, a miss in the places checked, and the attach can still be sent on the operator's
 * word (the hint). Returns -ENOENT (message, next step), or 0 when directories past the caps
 * leave it unknown (the first such is noted in c->note). */
static int missing(struct ctx *c, const struct ld_search *s, const char *who, const char *name,
                   const char *looked, bool cut, struct cla_error *e)
{
    char verdict[200];
    if (s->unchecked)
        snprintf(verdict, sizeof(verdict),
                 "which is in none of the places checked (%zu %s entries not checked: each list "
                 "is checked up to %d directories and %d bytes)",
                 s->unchecked, s->unchecked_why, LDSEARCH_MAX_DIRS, LDSEARCH_BUF);
    else
        snprintf(verdict, sizeof(verdict), "which the target's loader would not find");
    /* The directories come from the target (LD_LIBRARY_PATH, its path file, its maps): they are
     * rendered (render.h) before they reach a message. */
    char who_shown[160], name_shown[160], looked_shown[400];
    render_text(who, strlen(who), who_shown, sizeof(who_shown));
    render_text(name, strlen(name), name_shown, sizeof(name_shown));
    render_text(looked, strlen(looked), looked_shown, sizeof(looked_shown));
    err_set(e, -ENOENT,
            "%s needs %s (DT_NEEDED), %s: not mapped in the target, not in %s%s, nor beside the "
            "%zu libraries it has mapped",
            who_shown, name_shown, verdict, looked_shown, cut ? "..." : "", c->n_mapped);
    if (s->unchecked) {
        /* It may be in a directory past the caps: the check cannot say it is missing. The
         * first such name is told, the others checked for a real miss. */
        if (!c->unchecked && c->note_size)
            snprintf(c->note, c->note_size, "not checked: %s", e ? e->msg : "");
        c->unchecked = true;
        err_clear(e);
        return 0;
    }
    return err_hint(e,
                    "ship %s with the profiler (a profiler directory, found through RUNPATH "
                    "$ORIGIN), or add it to the app's image; --skip-dependency-check sends the "
                    "attach anyway",
                    name_shown);
}

/* Resolves one DT_NEEDED `name` of the object at `origin`/`elf`: 0 found, -ENOENT (message),
 * -ENOMEM. */
static int resolve(struct ctx *c, const struct elf_info *elf, const char *origin, const char *who,
                   const char *name, struct cla_error *e)
{
    const struct depcheck_input *in = c->in;
    if (loader_builtin(in->libc, name))
        return 0;
    /* A name with a '/' is a path, used as it is with no search. A relative one is relative to
     * the target's working directory at load time, which we cannot know: it is let through. */
    if (strchr(name, '/'))
        return name[0] != '/' || exists_in_root(in->rootfd, name) ? 0 : -ENOENT;
    struct ld_request rq = {
        .libc = in->libc,
        .arch = in->arch,
        .runpath = elf->runpath,
        .runpath_is_rpath = elf->runpath_is_rpath,
        .origin = origin,
        .ld_library_path = in->ld_library_path,
        .ld_library_path_len = in->ld_library_path_len,
        .musl_path = c->musl_path,
        .musl_path_len = c->musl_path_len,
    };
    /* On the heap: with every directory's text (LDSEARCH_BUF per list) it is over 32 KiB. */
    struct ld_search *s = malloc(sizeof(*s));
    if (!s)
        return err_set(e, -ENOMEM, "out of memory");
    ldsearch_dirs(&rq, s);
    int r = 0;
    /* Only for the message; a long search list is cut and marked with "...". */
    char looked[300];
    size_t used = 0;
    looked[0] = '\0';
    char path[TARGET_PATH_MAX];
    for (size_t i = 0; r == 0 && i < s->n; i++) {
        /* A path longer than TARGET_PATH_MAX is one we never open: skipped, not cut. */
        if (snprintf(path, sizeof(path), "%s/%s", s->dir[i], name) >= (int)sizeof(path))
            continue;
        if (exists_in_root(in->rootfd, path))
            goto found;
        note_dir(looked, sizeof(looked), &used, s->dir[i]);
    }
    if (r == 0 && (r = load_mapped(c)) < 0)
        err_set(e, r, "out of memory");
    int loaded = r == 0 ? mapped_by_name(c, name) : 0;
    if (loaded < 0)
        r = err_set(e, loaded, "out of memory");
    if (loaded > 0)
        goto found;
    /* The directories of libraries already mapped (a runtime's own, a distro's): what a
     * self-contained app ships beside itself is found there. */
    const char *p = c->mapped;
    for (size_t i = 0; r == 0 && i < c->n_mapped; i++, p += strlen(p) + 1) {
        size_t dl = (size_t)(base_of(p) - p);
        if (is_deleted(p))
            continue;
        if (snprintf(path, sizeof(path), "%.*s%s", (int)dl, p, name) >= (int)sizeof(path))
            continue;
        if (exists_in_root(in->rootfd, path))
            goto found;
    }
    if (r == 0)
        r = missing(c, s, who, name, looked, used >= sizeof(looked) - 1, e);
    free(s);
    return r;
found:
    free(s);
    return 0;
}

/* Stops at the first miss: one library named per message, the one to ship first. */
static int check_object(struct ctx *c, const struct elf_info *elf, const char *origin,
                        const char *who, struct cla_error *e)
{
    for (unsigned i = 0; i < elf->n_needed; i++) {
        int r = resolve(c, elf, origin, who, elfinfo_needed(elf, i), e);
        if (r < 0)
            return r;
    }
    return 0;
}

/* musl's loader reads /etc/ld-musl-<arch>.path in place of its default directories when it
 * exists. Read inside the target's root; absent or unreadable means the default, as for musl. */
static void read_musl_path(struct ctx *c)
{
    const char *arch = ldsearch_musl_arch(c->in->arch);
    if (c->in->libc != RID_LIBC_MUSL || !arch)
        return;
    char path[64];
    snprintf(path, sizeof(path), "/etc/ld-musl-%s.path", arch);
    _cleanup_close_ int fd = rootfs_open(c->in->rootfd, path, ROOTFS_REG, O_RDONLY, 0, NULL);
    if (fd < 0 || util_read_all(fd, MUSL_PATH_MAX, &c->musl_path, &c->musl_path_len) < 0)
        c->musl_path = NULL;
}

int depcheck_run(const struct depcheck_input *in, char *ret_note, size_t note_size,
                 struct cla_error *e)
{
    struct ctx c = {.in = in, .note = ret_note, .note_size = note_size};
    if (note_size)
        ret_note[0] = '\0';
    read_musl_path(&c);
    int r = 0;
    const struct profset_build *b = in->build;
    char origin[TARGET_PATH_MAX];
    /* $ORIGIN is the directory of the object that has the RUNPATH, as the target sees it: the
     * delivered file's directory, or each library's own directory inside the delivered one. */
    if (!b->dir) {
        const char *base = base_of(in->delivered);
        snprintf(origin, sizeof(origin), "%.*s", (int)(base - in->delivered - 1), in->delivered);
        r = check_object(&c, &b->elf, origin, base, e);
    }
    for (size_t i = 0; b->dir && r == 0 && i < b->dir->n; i++) {
        const struct profdir_file *f = &b->dir->files[i];
        if (!f->elf)
            continue;
        const char *base = base_of(f->path);
        snprintf(origin, sizeof(origin), "%s%s%.*s", in->delivered, base == f->path ? "" : "/",
                 (int)(base == f->path ? 0 : base - f->path - 1), f->path);
        r = check_object(&c, f->elf, origin, f->path, e);
    }
    free(c.mapped);
    free(c.sonames);
    free(c.musl_path);
    return r < 0 ? r : c.unchecked ? 1 : 0;
}
