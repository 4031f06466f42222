/* SPDX-License-Identifier: Apache-2.0 */
#include "target/proc_parse.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/render.h"
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

const char *proc_environ_diagnostics_off(const char *buf, size_t len)
{
    static const char *const names[] = {"DOTNET_EnableDiagnostics", "COMPlus_EnableDiagnostics",
                                        "DOTNET_EnableDiagnostics_IPC",
                                        "COMPlus_EnableDiagnostics_IPC"};
    enum { N = sizeof(names) / sizeof(names[0]) };
    if (!buf)
        return NULL;
    const char *v[N];
    size_t vlen[N];
    proc_environ_get_many(buf, len, names, N, v, vlen);
    /* /proc/<pid>/environ is the environment as it was at execve: what the runtime read when it
     * started, not a variable the process set later. */
    for (size_t i = 0; i < N; i++)
        if (v[i] && vlen[i] == 1 && v[i][0] == '0')
            return names[i];
    return NULL;
}

void proc_environ_get_many(const char *buf, size_t len, const char *const *names, size_t n,
                           const char **values, size_t *lens)
{
    for (size_t i = 0; i < n; i++)
        values[i] = NULL;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *z = memchr(p, '\0', (size_t)(end - p));
        const char *ve = z ? z : end;
        size_t elen = (size_t)(ve - p);
        /* A last entry without its NUL (the file cut at our read cap) still counts. */
        for (size_t i = 0; i < n; i++) {
            size_t nlen = strlen(names[i]);
            if (elen > nlen && p[nlen] == '=' && memcmp(p, names[i], nlen) == 0) {
                values[i] = p + nlen + 1;
                lens[i] = elen - nlen - 1;
            }
        }
        if (!z)
            break;
        p = z + 1;
    }
}

int proc_environ_get(const char *buf, size_t len, const char *name, const char **ret_value,
                     size_t *ret_len)
{
    const char *v;
    size_t vlen = 0;
    proc_environ_get_many(buf, len, &name, 1, &v, &vlen);
    if (!v)
        return 0;
    *ret_value = v;
    *ret_len = vlen;
    return 1;
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

/* Is there a "." or ".." component in the absolute path v[0..len)? Returns the one found
 * (".", "..") or NULL. */
static const char *dot_component(const char *v, size_t len)
{
    size_t i = 0;
    while (i < len) {
        while (i < len && v[i] == '/')
            i++;
        size_t start = i;
        while (i < len && v[i] != '/')
            i++;
        size_t n = i - start;
        if (n == 1 && v[start] == '.')
            return ".";
        if (n == 2 && v[start] == '.' && v[start + 1] == '.')
            return "..";
    }
    return NULL;
}

int proc_tmpdir_from_environ(const char *env, size_t env_len, char *out, size_t size,
                             struct cla_error *e)
{
    const char *v;
    size_t vlen;
    if (!proc_environ_get(env, env_len, "TMPDIR", &v, &vlen) || vlen == 0) {
        v = "/tmp/";
        vlen = 5;
    }
    /* The runtime would use such a TMPDIR as it is, but it is the target's text: it reaches our
     * messages, paths we print and paths we write under. Anything a terminal would act upon or
     * hide (render.h), and any "." or ".." (a path that says one place and resolves to another),
     * is refused here, before any of it is used; the value is quoted rendered. */
    char shown[160];
    size_t at;
    uint32_t cp;
    enum render_class c = render_find(v, vlen, &at, &cp);
    if (c != RENDER_SAFE) {
        render_text(v, vlen, shown, sizeof(shown));
        if (c == RENDER_INVALID)
            return err_set(e, -EPROTO, "the target's TMPDIR '%s' is not valid UTF-8 at byte %zu",
                           shown, at);
        return err_set(e, -EPROTO, "the target's TMPDIR '%s' holds %s U+%04X at byte %zu", shown,
                       render_class_name(c), (unsigned)cp, at);
    }
    if (v[0] != '/') {
        render_text(v, vlen, shown, sizeof(shown));
        return err_set(e, -EPROTO, "the target's TMPDIR '%s' is not an absolute path", shown);
    }
    const char *dot = dot_component(v, vlen);
    if (dot) {
        render_text(v, vlen, shown, sizeof(shown));
        return err_set(e, -EPROTO, "the target's TMPDIR '%s' has a '%s' component", shown, dot);
    }
    bool slash = v[vlen - 1] == '/';
    if (vlen + (slash ? 0 : 1) + 1 > size)
        return err_set(e, -ENAMETOOLONG, "the target's TMPDIR of %zu bytes is too long", vlen);
    memcpy(out, v, vlen);
    if (!slash)
        out[vlen++] = '/';
    out[vlen] = '\0';
    return 0;
}

/* Copies one space-delimited mountinfo field, decoding the kernel's \ooo escapes. */
static int mi_field(const char **pp, const char *end, char *out, size_t size)
{
    const char *p = *pp;
    size_t o = 0;
    while (p < end && *p != ' ') {
        char c = *p++;
        if (c == '\\') {
            if (end - p < 3)
                return -EPROTO;
            int v = 0;
            for (int k = 0; k < 3; k++) {
                if (p[k] < '0' || p[k] > '7')
                    return -EPROTO;
                v = v * 8 + (p[k] - '0');
            }
            /* A NUL would cut the decoded path short of what the kernel meant; "\400" and up
             * is no byte. */
            if (v == 0 || v > 255)
                return -EPROTO;
            c = (char)v;
            p += 3;
        }
        /* Refused rather than cut: a shortened mount point would match the wrong paths. */
        if (o + 1 >= size)
            return -EPROTO;
        out[o++] = c;
    }
    if (o == 0)
        return -EPROTO;
    out[o] = '\0';
    if (p < end)
        p++; /* the space */
    *pp = p;
    return 0;
}

/* Does the comma-separated option list (not NUL-terminated) hold `opt` exactly? */
static bool has_opt(const char *list, size_t len, const char *opt)
{
    size_t ol = strlen(opt);
    const char *p = list, *end = list + len;
    while (p < end) {
        const char *c = memchr(p, ',', (size_t)(end - p));
        const char *fe = c ? c : end;
        if ((size_t)(fe - p) == ol && memcmp(p, opt, ol) == 0)
            return true;
        p = fe + 1;
    }
    return false;
}

static int mi_line(const char *p, const char *end, struct proc_mount *m)
{
    char tmp[TARGET_PATH_MAX_MOUNT];
    /* 1 mount id, 2 parent id, 3 major:minor, 4 root, 5 mount point, 6 options. */
    for (int f = 1; f <= 3; f++)
        if (mi_field(&p, end, tmp, sizeof(tmp)) < 0)
            return -EPROTO;
    if (mi_field(&p, end, tmp, sizeof(tmp)) < 0)
        return -EPROTO;
    if (mi_field(&p, end, m->mount_point, sizeof(m->mount_point)) < 0 || m->mount_point[0] != '/')
        return -EPROTO;
    const char *opts = p;
    while (p < end && *p != ' ')
        p++;
    size_t optlen = (size_t)(p - opts);
    if (optlen == 0 || p >= end)
        return -EPROTO;
    m->read_only = has_opt(opts, optlen, "ro");
    m->noexec = has_opt(opts, optlen, "noexec");
    /* Optional fields up to the lone "-". */
    for (;;) {
        while (p < end && *p == ' ')
            p++;
        if (p >= end)
            return -EPROTO;
        if (*p == '-' && (p + 1 == end || p[1] == ' ')) {
            p++;
            break;
        }
        while (p < end && *p != ' ')
            p++;
    }
    while (p < end && *p == ' ')
        p++;
    if (mi_field(&p, end, m->fstype, sizeof(m->fstype)) < 0)
        return -EPROTO;
    if (mi_field(&p, end, tmp, sizeof(tmp)) < 0) /* source */
        return -EPROTO;
    const char *super = p;
    while (p < end && *p != ' ')
        p++;
    /* A mount is read-only if either its own options or its superblock's say so. */
    if (has_opt(super, (size_t)(p - super), "ro"))
        m->read_only = true;
    return 0;
}

int proc_parse_mountinfo(const char *buf, size_t len, struct proc_mount **ret_mounts, size_t *ret_n,
                         struct cla_error *e)
{
    struct proc_mount *list = NULL;
    size_t n = 0, alloc = 0, lineno = 0;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        lineno++;
        if (le > p) {
            /* A process can create mounts in its own namespace by the ten thousand (fs.mount-max
             * is 100000 by default): the cap keeps the parse and the linear search bounded. */
            if (n == PROC_MOUNTS_MAX) {
                free(list);
                return err_set(e, -E2BIG, "mountinfo has more than %d mounts", PROC_MOUNTS_MAX);
            }
            if (n == alloc) {
                alloc = alloc ? alloc * 2 : 32;
                struct proc_mount *nlist = realloc(list, alloc * sizeof(*nlist));
                if (!nlist) {
                    free(list);
                    return err_set(e, -ENOMEM, "out of memory");
                }
                list = nlist;
            }
            memset(&list[n], 0, sizeof(list[n]));
            if (mi_line(p, le, &list[n]) < 0) {
                free(list);
                return err_set(e, -EPROTO, "mountinfo line %zu is malformed", lineno);
            }
            n++;
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    *ret_mounts = list;
    *ret_n = n;
    return 0;
}

const struct proc_mount *proc_mount_for_path(const struct proc_mount *mounts, size_t n,
                                             const char *path)
{
    const struct proc_mount *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < n; i++) {
        const char *mp = mounts[i].mount_point;
        size_t ml = strlen(mp);
        /* "/" is a prefix of everything; "/tmp" holds "/tmp" and "/tmp/x" but not "/tmpx". */
        bool prefix = ml == 1 || (strncmp(path, mp, ml) == 0 && (path[ml] == '/' || !path[ml]));
        /* Stacked mounts: the last listed is on top, except on "/": a mount stacked on the
         * process's own root is never reached from it (lookups start below it), and the kernel
         * lists the process's root mount first. */
        bool wins = ml == 1 ? best_len == 0 && !best : ml >= best_len;
        if (prefix && wins) {
            best = &mounts[i];
            best_len = ml;
        }
    }
    return best;
}

/* Iterates the path column of maps lines: the text after the 5th field, left-trimmed. */
static const char *maps_path(const char *line, const char *le)
{
    const char *p = line;
    for (int f = 0; f < 5; f++) {
        while (p < le && *p != ' ')
            p++;
        while (p < le && *p == ' ')
            p++;
    }
    return p < le ? p : NULL;
}

int proc_maps_libc(const char *buf, size_t len)
{
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *path = maps_path(p, le);
        if (path) {
            const char *slash = path;
            for (const char *q = path; q < le; q++)
                if (*q == '/')
                    slash = q + 1;
            size_t bl = (size_t)(le - slash);
            if (bl > 7 && memcmp(slash, "ld-musl-", 8) == 0)
                return 1;
            if (bl > 8 && memcmp(slash, "ld-linux-", 9) == 0)
                return 2;
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    return 0;
}

int proc_maps_has(const char *buf, size_t len, const char *name)
{
    size_t nl_len = strlen(name);
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *path = maps_path(p, le);
        if (path && (size_t)(le - path) > nl_len && le[-(ptrdiff_t)nl_len - 1] == '/' &&
            memcmp(le - nl_len, name, nl_len) == 0)
            return 1;
        if (!nl)
            break;
        p = nl + 1;
    }
    return 0;
}

int proc_maps_scan_feed(struct proc_maps_scan *s, size_t n, const char *name)
{
    /* The caller reads into buf + have, at most the room left: more is a caller bug. */
    if (n > sizeof(s->buf) - s->have)
        return -EINVAL;
    if (n == 0) {
        int r = s->have > 0 ? proc_maps_has(s->buf, s->have, name) : 0;
        s->have = 0;
        return r;
    }
    s->have += n;
    const char *nl = memrchr(s->buf, '\n', s->have);
    if (!nl)
        return s->have == sizeof(s->buf) ? -EPROTO : 0;
    size_t whole = (size_t)(nl - s->buf) + 1;
    if (proc_maps_has(s->buf, whole, name) == 1)
        return 1;
    memmove(s->buf, s->buf + whole, s->have - whole);
    s->have -= whole;
    return 0;
}

size_t proc_maps_libraries(const char *buf, size_t len, char *out, size_t size, size_t max)
{
    size_t n = 0, used = 0;
    const char *p = buf, *end = buf + len;
    while (p < end && n < max) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *path = maps_path(p, le);
        p = nl ? nl + 1 : end;
        if (!path || *path != '/' || memchr(path, '\0', (size_t)(le - path)))
            continue;
        size_t plen = (size_t)(le - path);
        const char *base = path;
        for (const char *q = path; q < le; q++)
            if (*q == '/')
                base = q + 1;
        /* The kernel appends " (deleted)" to an unlinked file's path: no such file exists
         * under that name, so nothing could be found beside it. */
        if (plen > 10 && memcmp(le - 10, " (deleted)", 10) == 0)
            continue;
        if (!memmem(base, (size_t)(le - base), ".so", 3))
            continue;
        bool seen = false;
        for (const char *q = out; q < out + used; q += strlen(q) + 1)
            if (strlen(q) == plen && memcmp(q, path, plen) == 0) {
                seen = true;
                break;
            }
        if (seen)
            continue;
        /* Out of room: stop rather than store a path cut short. */
        if (plen + 1 > size - used)
            break;
        memcpy(out + used, path, plen);
        out[used + plen] = '\0';
        used += plen + 1;
        n++;
    }
    return n;
}

int proc_maps_runtime_library(const char *buf, size_t len, char *out, size_t size)
{
    static const char name[] = "libcoreclr.so";
    const size_t nlen = sizeof(name) - 1;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *path = maps_path(p, le);
        p = nl ? nl + 1 : end;
        if (!path || *path != '/' || memchr(path, '\0', (size_t)(le - path)))
            continue;
        size_t plen = (size_t)(le - path);
        if (plen <= nlen || le[-(ptrdiff_t)nlen - 1] != '/' || memcmp(le - nlen, name, nlen) != 0)
            continue;
        /* A path that does not fit is not reported at all: a cut one would name another file. */
        if (plen + 1 > size)
            return 0;
        memcpy(out, path, plen);
        out[plen] = '\0';
        return 1;
    }
    return 0;
}
