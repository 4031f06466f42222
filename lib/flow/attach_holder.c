/* SPDX-License-Identifier: Apache-2.0 */
/* already_active: who holds the runtime's one profiler slot, searched among the libraries the
 * target maps, bounded in libraries, bytes and time. */
#include "flow/attach_holder.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "base/render.h"
#include "base/util.h"
#include "profset/elffile.h"
#include "target/proc_maps.h"
#include "target/rootfs.h"
#include "target/target.h"

/* The holder search's running totals against its caps (bounds.h). */
struct holder_search {
    int64_t deadline_ms;
    uint64_t bytes;
    bool unread; /* a library given up on: past its own caps, or changed while read */
};

/* Does the mapped library `lib` export DllGetClassObject (*ret_yes; no when it is gone, not ours
 * to open or not ELF)? Returns ATTACH_HOLDER_SEARCHED to go on, or the bound that stops the
 * search. Only the chunks of the file its headers need are read (elffile.h): the target chooses
 * every library's size. */
static enum attach_holder_gap exports_entry(const struct target *t, const char *lib,
                                            struct holder_search *hs, bool *ret_yes)
{
    *ret_yes = false;
    if (util_now_ms() >= hs->deadline_ms)
        return ATTACH_HOLDER_DEADLINE;
    if (hs->bytes >= HOLDER_BYTES_MAX)
        return ATTACH_HOLDER_BYTES_CAP;
    /* maps shows resolved paths, so no link needs following; and after delivery the filter
     * answers openat2 with EPERM, where rootfs_open() walks with openat. */
    _cleanup_close_ int fd = rootfs_open(t->rootfd, lib, ROOTFS_REG, O_RDONLY, 0, NULL);
    if (fd < 0)
        return ATTACH_HOLDER_SEARCHED;
    uint64_t room = HOLDER_BYTES_MAX - hs->bytes;
    struct elffile_limits lim = {
        .max_bytes = room < HOLDER_FILE_BYTES_MAX ? room : HOLDER_FILE_BYTES_MAX,
        .deadline_ms = hs->deadline_ms,
    };
    struct elffile_stats st;
    struct elf_info ei;
    int r = elffile_parse(fd, &lim, &ei, &st, NULL);
    hs->bytes += st.bytes_read;
    if (r == -ETIMEDOUT)
        return ATTACH_HOLDER_DEADLINE;
    /* Out of room for one more page in all, rather than this library past its own caps. */
    if (r == -E2BIG && HOLDER_BYTES_MAX - hs->bytes < (1u << ELFFILE_CHUNK_SHIFT))
        return ATTACH_HOLDER_BYTES_CAP;
    if (r == -E2BIG || r == -EIO)
        hs->unread = true;
    *ret_yes = r == 0 && ei.exports_class_factory;
    return ATTACH_HOLDER_SEARCHED;
}

/* already_active: who holds the slot? A mapped library (other than ours) that exports
 * DllGetClassObject is a loaded CLR profiler; the environment may name one too. The search is
 * bounded in libraries, bytes and time (the attach's --timeout from its start): when a bound
 * stops it before a holder is found, res->holder_gap says the holder was not determined, and
 * why, rather than letting "none named" pass for "none loaded". */
void attach_holder_find(const struct attach_opts *o, struct target *t, const struct placed *p,
                        struct attach_result *res)
{
    struct holder_search hs = {.deadline_ms = util_now_ms() + o->timeout_ms};
    _cleanup_free_ char *maps = NULL;
    size_t mlen;
    if (target_read_file(t, "maps", PROC_MAPS_MAX, &maps, &mlen, NULL) < 0) {
        res->holder_gap = ATTACH_HOLDER_NO_MAPS;
        return;
    }
    res->mapped = proc_maps_has(maps, mlen, strrchr(p->path, '/') + 1) == 1;
    /* Room for one path more than the cap, each as long as a path gets: only the count can
     * stop the listing, so one more than the cap shows that some were left out. */
    size_t size = (HOLDER_LIBS_MAX + 1) * (TARGET_PATH_MAX + 1);
    _cleanup_free_ char *libs = malloc(size);
    if (!libs)
        return;
    size_t n = proc_maps_libraries(maps, mlen, libs, size, HOLDER_LIBS_MAX + 1);
    enum attach_holder_gap gap =
        n > HOLDER_LIBS_MAX ? ATTACH_HOLDER_LIBS_CAP : ATTACH_HOLDER_SEARCHED;
    if (n > HOLDER_LIBS_MAX)
        n = HOLDER_LIBS_MAX;
    /* Another profiler first. Our own library, just mapped by the refused attach, is the holder
     * only when it was there before us (reused) and nothing else is: this very profiler was
     * attached already. */
    for (int pass = 0; pass < 2; pass++) {
        const char *lib = libs;
        for (size_t i = 0; i < n; i++, lib += strlen(lib) + 1) {
            bool ours = strcmp(lib, p->path) == 0;
            if (pass == 0 ? ours : !ours || !p->reused)
                continue;
            bool yes;
            enum attach_holder_gap stop = exports_entry(t, lib, &hs, &yes);
            if (yes) {
                render_text(lib, strlen(lib), res->holder, sizeof(res->holder));
                return;
            }
            if (stop != ATTACH_HOLDER_SEARCHED) {
                res->holder_gap = stop;
                return;
            }
        }
    }
    res->holder_gap = gap != ATTACH_HOLDER_SEARCHED ? gap
                      : hs.unread                   ? ATTACH_HOLDER_UNREAD
                                                    : ATTACH_HOLDER_SEARCHED;
}
