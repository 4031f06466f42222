/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The apiserver's replies, decoded on a buffer: they come from the network, so every field is
 * optional, type-checked and cut to a fixed size before anything is shown or acted on.
 */
#include "report/k8s_reply.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "report/k8s_event.h"

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Copies an optional string member for display: absent -> "", not a string -> false.
 * Control bytes become '?': the text ends up on a terminal via cmd/. */
static bool copy_member(json_t *obj, const char *key, char *dst, size_t size)
{
    json_t *v = json_object_get(obj, key);
    dst[0] = '\0';
    if (!v || json_is_null(v))
        return true;
    if (!json_is_string(v))
        return false;
    size_t n = k8s_utf8_copy(json_string_value(v), size - 1, dst);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)dst[i] < 0x20 || dst[i] == 0x7f)
            dst[i] = '?';
    return true;
}

static bool parse_causes(json_t *causes, struct k8s_status *st)
{
    if (!json_is_array(causes))
        return false;
    size_t i;
    json_t *c;
    json_array_foreach(causes, i, c)
    {
        if (!json_is_object(c))
            return false;
        struct k8s_status_cause tmp = {0};
        if (!copy_member(c, "reason", tmp.reason, sizeof(tmp.reason)) ||
            !copy_member(c, "field", tmp.field, sizeof(tmp.field)) ||
            !copy_member(c, "message", tmp.message, sizeof(tmp.message)))
            return false;
        /* Every cause is type-checked, only the first few are kept: the error text has room
         * for a handful, and the total still tells the reader how many were left out. */
        if (st->n_causes < K8S_STATUS_CAUSES_MAX)
            st->causes[st->n_causes++] = tmp;
    }
    st->n_causes_total = json_array_size(causes);
    return true;
}

static bool parse_details(json_t *d, struct k8s_status *st)
{
    if (!json_is_object(d))
        return false;
    if (!copy_member(d, "name", st->details_name, sizeof(st->details_name)) ||
        !copy_member(d, "group", st->details_group, sizeof(st->details_group)) ||
        !copy_member(d, "kind", st->details_kind, sizeof(st->details_kind)))
        return false;
    json_t *ra = json_object_get(d, "retryAfterSeconds");
    if (ra) {
        if (!json_is_integer(ra) || json_integer_value(ra) < 0)
            return false;
        json_int_t v = json_integer_value(ra);
        st->retry_after_s = v > K8S_RETRY_AFTER_MAX_S ? K8S_RETRY_AFTER_MAX_S : (int)v;
    }
    json_t *causes = json_object_get(d, "causes");
    return !causes || json_is_null(causes) || parse_causes(causes, st);
}

int k8s_status_parse(const char *buf, size_t len, struct k8s_status *ret, struct cla_error *e)
{
    if (len > K8S_STATUS_MAX)
        return err_set(e, -E2BIG, "k8s: Status body of %zu bytes is above the %d-byte cap", len,
                       K8S_STATUS_MAX);
    /* Duplicate keys are refused: {"code":422,"code":200} means different things to different
     * parsers, and a reply that is ambiguous is not one to act on. json_loadb takes the
     * length, so the buffer needs no NUL and trailing bytes are an error. */
    json_error_t jerr;
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return err_set(e, -EPROTO, "k8s: Status body is not JSON: %s", jerr.text);

    struct k8s_status st;
    memset(&st, 0, sizeof(st));
    char kind[16];
    const char *bad = NULL;
    json_t *code = json_object_get(root, "code");
    json_t *details = json_object_get(root, "details");
    if (!json_is_object(root))
        bad = "not an object";
    else if (!copy_member(root, "kind", kind, sizeof(kind)) || strcmp(kind, "Status") != 0)
        bad = "kind is not Status";
    else if (code && (!json_is_integer(code) || json_integer_value(code) < 0 ||
                      json_integer_value(code) > 999))
        bad = "code is not an HTTP status";
    else if (!copy_member(root, "status", st.status, sizeof(st.status)) ||
             !copy_member(root, "reason", st.reason, sizeof(st.reason)) ||
             !copy_member(root, "message", st.message, sizeof(st.message)))
        bad = "a string member has another type";
    else if (details && !json_is_null(details) && !parse_details(details, &st))
        bad = "malformed details";
    if (!bad && code)
        st.code = (int)json_integer_value(code);
    json_decref(root);
    if (bad)
        return err_set(e, -EPROTO, "k8s: malformed Status body: %s", bad);
    *ret = st;
    return 0;
}

size_t k8s_status_describe(const struct k8s_status *st, char *buf, size_t size)
{
    if (size == 0)
        return 0;
    size_t off = 0;
    int n = snprintf(buf, size, "%s", st->message[0] ? st->message : st->reason);
    off = n < 0 ? 0 : (size_t)n;
    for (size_t i = 0; i < st->n_causes && off < size; i++) {
        const struct k8s_status_cause *c = &st->causes[i];
        n = snprintf(buf + off, size - off, "%s%s: %s", i == 0 ? " [" : "; ",
                     c->field[0] ? c->field : c->reason, c->message);
        off += n < 0 ? 0 : (size_t)n;
    }
    if (st->n_causes > 0 && off < size) {
        if (st->n_causes_total > st->n_causes)
            n = snprintf(buf + off, size - off, "; +%zu more]", st->n_causes_total - st->n_causes);
        else
            n = snprintf(buf + off, size - off, "]");
        off += n < 0 ? 0 : (size_t)n;
    }
    return off < size ? off : size - 1;
}

/* Loads a reply of `len` bytes whose kind must be `kind` (the message calls it `what`): the
 * object in *ret (caller decrefs), -E2BIG above K8S_RESPONSE_MAX, -EPROTO. */
static int load_reply(const char *buf, size_t len, const char *kind, const char *what, json_t **ret,
                      struct cla_error *e)
{
    if (len > K8S_RESPONSE_MAX)
        return err_set(e, -E2BIG, "k8s: %s reply of %zu bytes is above the cap", what, len);
    json_error_t jerr;
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return err_set(e, -EPROTO, "k8s: %s reply is not JSON: %s", what, jerr.text);
    const char *k = json_string_value(json_object_get(root, "kind"));
    if (!json_is_object(root) || !k || strcmp(k, kind) != 0) {
        json_decref(root);
        return err_set(e, -EPROTO, "k8s: malformed %s reply: kind is not %s", what, kind);
    }
    *ret = root;
    return 0;
}

/* Releases a reply load_reply() gave and turns `bad` (NULL when it passed) into the result. */
static int reply_done(json_t *root, const char *what, const char *bad, struct cla_error *e)
{
    json_decref(root);
    return bad ? err_set(e, -EPROTO, "k8s: malformed %s reply: %s", what, bad) : 0;
}

int k8s_pod_parse_uid(const char *buf, size_t len, const char *want_name, const char *want_ns,
                      char *ret_uid, struct cla_error *e)
{
    json_t *root;
    int r = load_reply(buf, len, "Pod", "pod", &root, e);
    if (r < 0)
        return r;
    const char *bad = NULL;
    json_t *meta = json_object_get(root, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    if (!json_is_object(meta) || !name || !ns)
        bad = "metadata without name and namespace";
    else if (strcmp(name, want_name) != 0 || strcmp(ns, want_ns) != 0)
        /* A uid taken from some other pod would file our Event under that pod. */
        bad = "reply is about another pod";
    else if (!uid || !uid[0] || strlen(uid) > K8S_UID_MAX)
        bad = "metadata.uid missing or too long";
    else
        /* The uid ends up in our JSON and in field selectors; UUIDs need nothing else. */
        for (const char *p = uid; *p && !bad; p++)
            if (!is_alnum(*p) && *p != '-')
                bad = "metadata.uid has characters a UUID never has";
    if (!bad)
        memcpy(ret_uid, uid, strlen(uid) + 1);
    return reply_done(root, "pod", bad, e);
}

int k8s_event_reply_check(const char *buf, size_t len, const char *want_name, struct cla_error *e)
{
    json_t *root;
    int r = load_reply(buf, len, "Event", "Event", &root, e);
    if (r < 0)
        return r;
    const char *bad = NULL;
    json_t *meta = json_object_get(root, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!json_is_object(meta) || !name)
        bad = "metadata without name";
    else if (strcmp(name, want_name) != 0)
        bad = "reply is about another Event";
    return reply_done(root, "Event", bad, e);
}
