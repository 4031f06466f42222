/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The token buckets of event_limit.h: one for the source, one per remembered series, refilled
 * by elapsed time, the least recently seen series dropped when the table is full.
 */
#include "report/event_limit.h"

#include <stdlib.h>
#include <string.h>

#define KEY_MAX 512

struct bucket {
    int64_t tokens_ms; /* tokens in units of the refill period's milliseconds */
    int64_t at_ms;     /* when tokens_ms was last brought up to date */
};

struct series {
    char key[KEY_MAX + 1];
    struct bucket b;
    int64_t seen_ms;
    bool used;
};

struct event_limit {
    struct bucket source;
    struct series series[EVENT_LIMIT_SERIES_MAX];
    uint64_t suppressed, pending;
    bool started;
};

/* A bucket holds `burst` tokens of `period` ms each, counted in ms so that refills are exact. */
static void refill(struct bucket *b, int64_t now, int burst, int64_t period)
{
    int64_t cap = (int64_t)burst * period;
    if (now > b->at_ms) {
        int64_t add = now - b->at_ms;
        b->tokens_ms = add >= cap - b->tokens_ms ? cap : b->tokens_ms + add;
    }
    b->at_ms = now;
}

static struct bucket full(int burst, int64_t period, int64_t now)
{
    return (struct bucket){.tokens_ms = (int64_t)burst * period, .at_ms = now};
}

struct event_limit *event_limit_new(void)
{
    return calloc(1, sizeof(struct event_limit));
}

void event_limit_free(struct event_limit *l)
{
    free(l);
}

/* The series of `key`, found or made (the least recently seen one replaced when full). */
static struct series *series_of(struct event_limit *l, const char *key, int64_t now)
{
    struct series *oldest = NULL, *free_slot = NULL;
    size_t n = strnlen(key, KEY_MAX);
    for (size_t i = 0; i < EVENT_LIMIT_SERIES_MAX; i++) {
        struct series *s = &l->series[i];
        if (!s->used) {
            if (!free_slot)
                free_slot = s;
            continue;
        }
        if (strncmp(s->key, key, n) == 0 && s->key[n] == '\0')
            return s;
        if (!oldest || s->seen_ms < oldest->seen_ms)
            oldest = s;
    }
    struct series *s = free_slot ? free_slot : oldest;
    memcpy(s->key, key, n);
    s->key[n] = '\0';
    s->b = full(EVENT_LIMIT_SERIES_BURST, EVENT_LIMIT_SERIES_MS, now);
    s->used = true;
    return s;
}

bool event_limit_take(struct event_limit *l, const char *key, int64_t now_ms)
{
    if (!l->started) {
        l->source = full(EVENT_LIMIT_SOURCE_BURST, EVENT_LIMIT_SOURCE_MS, now_ms);
        l->started = true;
    }
    refill(&l->source, now_ms, EVENT_LIMIT_SOURCE_BURST, EVENT_LIMIT_SOURCE_MS);
    struct series *s = series_of(l, key, now_ms);
    s->seen_ms = now_ms;
    refill(&s->b, now_ms, EVENT_LIMIT_SERIES_BURST, EVENT_LIMIT_SERIES_MS);
    if (l->source.tokens_ms < EVENT_LIMIT_SOURCE_MS || s->b.tokens_ms < EVENT_LIMIT_SERIES_MS) {
        l->suppressed++;
        l->pending++;
        return false;
    }
    l->source.tokens_ms -= EVENT_LIMIT_SOURCE_MS;
    s->b.tokens_ms -= EVENT_LIMIT_SERIES_MS;
    return true;
}

uint64_t event_limit_suppressed_total(const struct event_limit *l)
{
    return l->suppressed;
}

uint64_t event_limit_take_note(struct event_limit *l)
{
    uint64_t n = l->pending;
    l->pending = 0;
    return n;
}
