/* SPDX-License-Identifier: Apache-2.0 */
/* The walk over the records of an inotify read (direvents.h): bounded by the buffer, every
 * length checked before it is used, the name parsed as the socket directory's names are. */
#include "target/direvents.h"

#include <stdint.h>
#include <string.h>
#include <sys/inotify.h>

#include "target/proc_parse.h"

/* The watch a socket name came in, kept once; past the bound, "any". */
static void note_wd(struct direvents *ret, int wd)
{
    for (unsigned i = 0; i < ret->nwds && i < DIREVENTS_WDS_MAX; i++)
        if (ret->wds[i] == wd)
            return;
    if (ret->nwds < DIREVENTS_WDS_MAX)
        ret->wds[ret->nwds++] = wd;
    else
        ret->wds_lost = true;
}

bool direvents_parse(const void *buf, size_t len, struct direvents *ret)
{
    const unsigned char *p = buf;
    size_t off = 0;
    while (off < len) {
        struct inotify_event ev;
        if (len - off < sizeof(ev)) {
            ret->overflow = true;
            break;
        }
        memcpy(&ev, p + off, sizeof(ev));
        off += sizeof(ev);
        if (ev.len > len - off) {
            ret->overflow = true;
            break;
        }
        const char *name = (const char *)p + off;
        off += ev.len;
        ret->records++;
        if (ev.mask & IN_Q_OVERFLOW)
            ret->overflow = true;
        if (ev.mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT))
            ret->gone = true;
        if ((ev.mask & IN_OPEN) && ev.len == 0)
            ret->opens++;
        if (!(ev.mask & (IN_CREATE | IN_MOVED_TO)) || ev.len == 0)
            continue;
        pid_t pid;
        uint64_t key;
        /* The kernel pads the name with NULs up to ev.len; a name without one is not a name. */
        size_t n = strnlen(name, ev.len);
        if (n < ev.len && proc_socket_name_parse(name, n, &pid, &key) == 1) {
            ret->sockets++;
            note_wd(ret, ev.wd);
        }
    }
    return ret->sockets || ret->gone || ret->overflow;
}
