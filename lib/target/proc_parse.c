/* SPDX-License-Identifier: Apache-2.0 */
/* The parsers of /proc/<pid>/stat and status, namespace links and diagnostic socket names, each
 * field checked against the buffer. Pure: no I/O. */
#include "target/proc_parse.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#include "base/util.h"

int proc_parse_stat(const char *buf, size_t len, struct proc_stat *ret_stat, struct cla_error *e)
{
    /* comm is the process's own choice and may hold ')' and spaces: the first '(' opens it and
     * the LAST ')' closes it (the runtime's PAL reads its own stat the same way), so a name like
     * "x) R 1 2" cannot shift the fields that follow. */
    const char *open = memchr(buf, '(', len);
    const char *close = NULL;
    for (size_t i = len; i > 0; i--) {
        if (buf[i - 1] == ')') {
            close = buf + i - 1;
            break;
        }
    }
    if (!open || !close || close < open)
        return err_set(e, -EPROTO, "proc: stat has no '(comm)'");

    struct proc_stat st = {0};
    size_t comm_len = (size_t)(close - open - 1);
    if (comm_len >= sizeof(st.comm))
        return err_set(e, -EPROTO, "proc: stat comm of %zu bytes", comm_len);
    /* A process names itself (prctl PR_SET_NAME): comm is kept as it is, for exact matching,
     * and rendered where it is shown (render.h). The kernel never puts a NUL in it. */
    if (memchr(open + 1, '\0', comm_len))
        return err_set(e, -EPROTO, "proc: stat comm holds a NUL byte");
    memcpy(st.comm, open + 1, comm_len);

    /* Fields after ") ": 3 state, 4 ppid, ..., 22 starttime (required); then, when present,
     * up to 50 env_start (kernels before 3.5 end earlier). */
    const char *p = close + 1, *end = buf + len;
    for (int field = 3; field <= 50; field++) {
        if (field > 22 && (p >= end || *p == '\n'))
            break;
        if (p >= end || *p != ' ')
            return err_set(e, -EPROTO, "proc: stat truncated before field %d", field);
        p++;
        const char *f = p;
        while (p < end && *p != ' ' && *p != '\n')
            p++;
        size_t flen = (size_t)(p - f);
        if (flen == 0)
            return err_set(e, -EPROTO, "proc: stat field %d is empty", field);
        uint64_t v;
        if (field == 3) {
            if (flen != 1)
                return err_set(e, -EPROTO, "proc: stat state field malformed");
            st.state = f[0];
        } else if (field == 4) {
            if (util_parse_u64(f, flen, INT_MAX, &v) < 0)
                return err_set(e, -EPROTO, "proc: stat ppid malformed");
            st.ppid = (pid_t)v;
        } else if (field == 22) {
            /* The runtime's socket key and our pin against pid reuse: taken exactly, in
             * clock ticks since boot, never rounded. */
            if (util_parse_u64(f, flen, UINT64_MAX, &v) < 0)
                return err_set(e, -EPROTO, "proc: stat starttime malformed");
            st.starttime = v;
        } else if (field == 26 || field == 28 || field == 48 || field == 50) {
            if (util_parse_u64(f, flen, UINT64_MAX, &v) < 0)
                return err_set(e, -EPROTO, "proc: stat field %d malformed", field);
            st.exec_marks[field == 26 ? 0 : field == 28 ? 1 : field == 48 ? 2 : 3] = v;
        }
    }
    *ret_stat = st;
    return 0;
}

/* Parses up to `max` whitespace-separated decimal ids; returns how many, or -EPROTO. */
static int parse_ids(const char *p, const char *end, uint64_t *out, int max, uint64_t limit)
{
    int n = 0;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (p == end)
            break;
        const char *f = p;
        while (p < end && *p != ' ' && *p != '\t')
            p++;
        /* More ids than the line can have: a forged file, refused rather than cut. */
        if (n == max)
            return -EPROTO;
        if (util_parse_u64(f, (size_t)(p - f), limit, &out[n]) < 0)
            return -EPROTO;
        n++;
    }
    return n;
}

/* "CapEff:\t000001ffffffffff": the kernel prints exactly 16 hex digits. */
static int parse_cap_hex(const char *p, const char *end, uint64_t *ret)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (end - p != 16)
        return -EPROTO;
    uint64_t v = 0;
    for (; p < end; p++) {
        unsigned d;
        if (*p >= '0' && *p <= '9')
            d = (unsigned)(*p - '0');
        else if (*p >= 'a' && *p <= 'f')
            d = (unsigned)(*p - 'a' + 10);
        else
            return -EPROTO;
        v = v << 4 | d;
    }
    *ret = v;
    return 0;
}

/* "Groups:\t4 27 1000 " (space separated, a trailing space, empty for none). Keeps the first
 * PROC_GROUPS_MAX; past that only notes that there were more. */
static int parse_groups(const char *p, const char *end, struct proc_status *st)
{
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (p == end)
            break;
        const char *f = p;
        while (p < end && *p != ' ' && *p != '\t')
            p++;
        uint64_t v;
        /* (gid_t)-1 is no group (it means "unchanged" to setgroups and chown), hence the limit. */
        if (util_parse_u64(f, (size_t)(p - f), UINT32_MAX - 1, &v) < 0)
            return -EPROTO;
        if (st->ngroups == PROC_GROUPS_MAX)
            st->groups_truncated = true;
        else
            st->groups[st->ngroups++] = (gid_t)v;
    }
    return 0;
}

int proc_parse_status(const char *buf, size_t len, struct proc_status *ret_status,
                      struct cla_error *e)
{
    struct proc_status st = {0};
    bool have_uid = false, have_gid = false;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *colon = memchr(p, ':', (size_t)(le - p));
        if (colon) {
            size_t klen = (size_t)(colon - p);
            uint64_t ids[32];
            if (klen == 3 && (memcmp(p, "Uid", 3) == 0 || memcmp(p, "Gid", 3) == 0)) {
                /* Real, effective, saved, filesystem: all four, as the kernel always prints
                 * them; -1 excluded, since it is no id (it means "unchanged" to set*id). */
                int n = parse_ids(colon + 1, le, ids, 4, UINT32_MAX - 1);
                if (n != 4)
                    return err_set(e, -EPROTO, "proc: status %.3s line malformed", p);
                for (int i = 0; i < 4; i++) {
                    if (p[0] == 'U')
                        st.uid[i] = (uid_t)ids[i];
                    else
                        st.gid[i] = (gid_t)ids[i];
                }
                if (p[0] == 'U')
                    have_uid = true;
                else
                    have_gid = true;
            } else if (klen == 4 && memcmp(p, "Tgid", 4) == 0) {
                if (parse_ids(colon + 1, le, ids, 1, INT_MAX) != 1 || ids[0] == 0)
                    return err_set(e, -EPROTO, "proc: status Tgid line malformed");
                st.tgid = (pid_t)ids[0];
                st.have_tgid = true;
            } else if (klen == 5 && memcmp(p, "NSpid", 5) == 0) {
                /* Linux nests at most 32 pid namespaces. */
                int n = parse_ids(colon + 1, le, ids, 32, INT_MAX);
                if (n < 1 || ids[n - 1] == 0)
                    return err_set(e, -EPROTO, "proc: status NSpid line malformed");
                /* The last is the pid in the process's own namespace: the one its runtime
                 * puts in its socket's name. */
                st.nspid = (pid_t)ids[n - 1];
                st.nspid_levels = n;
                st.have_nspid = true;
            } else if (klen == 6 && memcmp(p, "CapEff", 6) == 0) {
                if (parse_cap_hex(colon + 1, le, &st.cap_eff) < 0)
                    return err_set(e, -EPROTO, "proc: status CapEff line malformed");
                st.have_cap_eff = true;
            } else if (klen == 6 && memcmp(p, "Groups", 6) == 0) {
                /* A forged file could repeat the line: the last one counts, alone. */
                st.ngroups = 0;
                st.groups_truncated = false;
                if (parse_groups(colon + 1, le, &st) < 0)
                    return err_set(e, -EPROTO, "proc: status Groups line malformed");
            }
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    /* Uid and Gid decide whose files we create in the target: without them, nothing is assumed
     * (a zeroed struct would read as root). */
    if (!have_uid || !have_gid)
        return err_set(e, -EPROTO, "proc: status lacks its Uid or Gid line");
    *ret_status = st;
    return 0;
}

int proc_ns_link_parse(const char *buf, size_t len, const char *type, uint64_t *ret_ino)
{
    size_t tlen = strlen(type);
    if (len < tlen + 4 || memcmp(buf, type, tlen) != 0 || buf[tlen] != ':' ||
        buf[tlen + 1] != '[' || buf[len - 1] != ']')
        return -EPROTO;
    uint64_t v;
    if (util_parse_u64(buf + tlen + 2, len - tlen - 3, UINT64_MAX, &v) < 0 || v == 0)
        return -EPROTO;
    *ret_ino = v;
    return 0;
}

int proc_socket_name_parse(const char *name, size_t len, pid_t *ret_pid, uint64_t *ret_key)
{
    static const char pre[] = "dotnet-diagnostic-", suf[] = "-socket";
    const size_t plen = sizeof(pre) - 1, slen = sizeof(suf) - 1;
    if (len <= plen + slen || memcmp(name, pre, plen) != 0 ||
        memcmp(name + len - slen, suf, slen) != 0)
        return 0;
    const char *p = name + plen, *end = name + len - slen;
    const char *dash = memchr(p, '-', (size_t)(end - p));
    if (!dash)
        return 0;
    size_t pl = (size_t)(dash - p), kl = (size_t)(end - dash - 1);
    /* The runtime prints with %d and %llu: no sign, no leading zeros (but "0" itself). */
    if ((pl > 1 && p[0] == '0') || (kl > 1 && dash[1] == '0'))
        return 0;
    uint64_t pid, key;
    if (util_parse_u64(p, pl, INT_MAX, &pid) < 0 || pid == 0 ||
        util_parse_u64(dash + 1, kl, UINT64_MAX, &key) < 0)
        return 0;
    *ret_pid = (pid_t)pid;
    *ret_key = key;
    return 1;
}
