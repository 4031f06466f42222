/* SPDX-License-Identifier: Apache-2.0 */
/* Filling a struct cla_error: set, prefix and hint, each cut to its buffer, all NULL-safe, and
 * the errno names ("ELOOP") that messages show. */
#include "base/err.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* What a caller that passed no error object (NULL) still needs: the code of the last error set on
 * this thread, so that `err_set(NULL, ...); return err_hint(NULL, ...);` returns the code and not
 * 0, which would read as success. The message is not kept: nobody asked for it. */
static __thread int unreported_code;

/* vsnprintf truncates to `size` (a long path in a message is cut, never overflows); on an
 * encoding error it returns < 0 and leaves the buffer unspecified, so it is emptied. */
static void vfill(char *buf, size_t size, const char *fmt, va_list ap)
{
    int n = vsnprintf(buf, size, fmt, ap);
    if (n < 0)
        buf[0] = '\0';
}

/* errno is saved and restored in every setter: callers set an error and then clean up, and
 * cleanup code (and callers' own checks) may still read the errno of the failed call. */
int err_set(struct cla_error *e, int code, const char *fmt, ...)
{
    if (!e)
        return unreported_code = code;
    int saved = errno;
    va_list ap;
    va_start(ap, fmt);
    vfill(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    /* A hint belongs to the error it was given for; a new error starts without one. */
    e->code = code;
    e->hint[0] = '\0';
    errno = saved;
    return code;
}

int err_setsys(struct cla_error *e, int code, const char *fmt, ...)
{
    if (!e)
        return unreported_code = code;
    int saved = errno;
    char head[CLA_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vfill(head, sizeof(head), fmt, ap);
    va_end(ap);
    /* `code` is a negative errno; strerror's text is for reading, the name (ELOOP) is what
     * people search for. A head that fills the buffer cuts this suffix, not the head. */
    const char *name = err_errno_name(-code);
    if (name)
        snprintf(e->msg, sizeof(e->msg), "%s: %s (%s)", head, strerror(-code), name);
    else
        snprintf(e->msg, sizeof(e->msg), "%s: %s", head, strerror(-code));
    e->code = code;
    e->hint[0] = '\0';
    errno = saved;
    return code;
}

int err_prefix(struct cla_error *e, const char *fmt, ...)
{
    if (!e)
        return unreported_code;
    int saved = errno;
    char head[CLA_ERR_MSG_MAX];
    char old[CLA_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vfill(head, sizeof(head), fmt, ap);
    va_end(ap);
    /* The old message is copied out first: the new text is written over the same buffer. */
    memcpy(old, e->msg, sizeof(old));
    old[sizeof(old) - 1] = '\0';
    /* Concatenate by hand: truncating a long chain of context is intended, and the end of the
     * message (the innermost cause) matters less than the head's context and the beginning. */
    size_t hl = strnlen(head, sizeof(e->msg) - 1);
    memcpy(e->msg, head, hl);
    size_t pos = hl;
    for (const char *s = ": "; *s && pos < sizeof(e->msg) - 1; s++)
        e->msg[pos++] = *s;
    size_t ol = strnlen(old, sizeof(old));
    if (ol > sizeof(e->msg) - 1 - pos)
        ol = sizeof(e->msg) - 1 - pos;
    memcpy(e->msg + pos, old, ol);
    e->msg[pos + ol] = '\0';
    errno = saved;
    return e->code;
}

/* The hint is what the operator can do about the error; cmd/ prints it after the message. It
 * keeps the code of the error already set and never changes it. */
int err_hint(struct cla_error *e, const char *fmt, ...)
{
    if (!e)
        return unreported_code;
    int saved = errno;
    va_list ap;
    va_start(ap, fmt);
    vfill(e->hint, sizeof(e->hint), fmt, ap);
    va_end(ap);
    errno = saved;
    return e->code;
}

void err_clear(struct cla_error *e)
{
    if (!e)
        return;
    e->code = 0;
    e->msg[0] = '\0';
    e->hint[0] = '\0';
}

const char *err_errno_name(int errnum)
{
    /* Only the values clrattach meets; the symbolic name helps people search for the cause. */
    switch (errnum) {
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case ESRCH: return "ESRCH";
    case EINTR: return "EINTR";
    case EIO: return "EIO";
    case E2BIG: return "E2BIG";
    case EBADF: return "EBADF";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EACCES: return "EACCES";
    case EEXIST: return "EEXIST";
    case EXDEV: return "EXDEV";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case EINVAL: return "EINVAL";
    case EMFILE: return "EMFILE";
    case ENOSPC: return "ENOSPC";
    case EROFS: return "EROFS";
    case EPIPE: return "EPIPE";
    case ERANGE: return "ERANGE";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOSYS: return "ENOSYS";
    case ELOOP: return "ELOOP";
    case EPROTO: return "EPROTO";
    case EBADMSG: return "EBADMSG";
    case EOVERFLOW: return "EOVERFLOW";
    case ENOTSOCK: return "ENOTSOCK";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case ECONNRESET: return "ECONNRESET";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ECONNREFUSED: return "ECONNREFUSED";
    case EALREADY: return "EALREADY";
    case ESTALE: return "ESTALE";
    case ENODATA: return "ENODATA";
    case ENOEXEC: return "ENOEXEC";
    case ECHILD: return "ECHILD";
    case EBUSY: return "EBUSY";
    case ETXTBSY: return "ETXTBSY";
    case EFBIG: return "EFBIG";
    case ENXIO: return "ENXIO";
    default: return NULL;
    }
}
