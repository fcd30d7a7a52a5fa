/*
 * Counting chunks: a chunk added to a thread's table (table_add), through the front cache, in
 * batches whose memory loads overlap (count_chunks; see Tally).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "count/count.h"
#include "count/table.h"

#define TABLE_FULL UINT64_MAX /* table_add: the table must spill first (its limit) */

/* Count one occurrence of chunk p[0:n] (hash h): the offset + 1 of its record, 0 when out of
 * memory, or TABLE_FULL when a new record would make it grow past its limit (it then holds at
 * least one record; the slots' growth counts three times their size: old and new side by side). */
uint64_t table_add(Table *t, const uint8_t *p, uint64_t n, uint64_t h) {
    uint64_t *slot = table_slot(t, p, n, h);
    if (*slot) {
        uint8_t *record = t->arena + (*slot & OFFSET_MASK) - 1;
        store_count(record, load_count(record) + 1);
        return *slot & OFFSET_MASK;
    }
    uint64_t need = t->len + 8 + 10 + n, cap = grown_capacity(t->cap, need, t->cap);
    int grow_slots = (t->records + 1) * 10 > (t->mask + 1) * 7;
    if (t->limit && t->records && cap + (t->mask + 1) * 8 * (grow_slots ? 3 : 1) > t->limit) return TABLE_FULL;
    if (need > OFFSET_MASK - 1) return 0;
    if (cap > t->cap) {
        uint8_t *arena = realloc(t->arena, cap);
        if (!arena) return 0;
        t->arena = arena;
        t->cap = cap;
    }
    uint64_t at = t->len;
    uint8_t *record = t->arena + at;
    store_count(record, 1);
    uint8_t *q = record + 8;
    uint64_t v = n;
    while (v >= 0x80) {
        *q++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *q++ = (uint8_t)v;
    memcpy(q, p, n);
    *slot = (h >> TAG_SHIFT) << TAG_SHIFT | (at + 1);
    t->len = (uint64_t)(q - t->arena) + n;
    t->records++;
    t->chunk_bytes += n;
    if (grow_slots && table_grow(t) < 0) return 0;
    return at + 1;
}

void front_flush_all(Table *t, Front *front) {
    for (size_t i = 0; i < (size_t)1 << FRONT_BITS; i++) front_flush(t, &front[i]);
}


/* The table's part of counting: each waiting chunk of the older batch in order (the front cache
 * first, as an earlier one may have brought it there), then the newer batch's records
 * prefetched (its slots were), and it becomes the older. -1 when out of memory. */
static int tally_step(Tally *y) {
    Table *t = y->table;
    Pending *old = y->waiting[y->older];
    for (int m = 0; m < y->nwaiting[y->older]; m++) {
        uint64_t n = old[m].len;
        Front *e = &y->front[old[m].key];
        if (n <= FRONT_MAX && front_hit(t, e, old[m].w0, old[m].w1, n)) continue;
        uint64_t record = table_add(t, old[m].at, n, old[m].h);
        if (record == TABLE_FULL) { /* (its limit: to disk, then into the emptied table) */
            if (table_spill(t, y->front) < 0) return -1;
            e = &y->front[old[m].key];
            record = table_add(t, old[m].at, n, old[m].h);
        }
        if (!record || record == TABLE_FULL) return -1;
        if (n <= FRONT_MAX) {
            if (e->record) front_flush(t, e);
            *e = (Front){old[m].w0, old[m].w1, record, (uint32_t)n, 0};
        }
    }
    y->nwaiting[y->older] = 0;
    y->older ^= 1;
    Pending *next = y->waiting[y->older];
    for (int m = 0; m < y->nwaiting[y->older]; m++) {
        uint64_t s = t->slots[home_slot(t, next[m].h)];
        if (s >> TAG_SHIFT == next[m].h >> TAG_SHIFT) /* the record of the first slot, if it may be the chunk's */
            PREFETCH(t->arena + (s & OFFSET_MASK) - 1);
        const Front *e = &y->front[next[m].key];
        if (next[m].len <= FRONT_MAX && e->pending) /* the record its front entry's count will go to */
            PREFETCH(t->arena + e->record - 1);
    }
    return 0;
}

/* The fresh chunks (see count_chunks) in order: front-cache hits are counted there; the others
 * wait for the table while two more batches go by (their slots prefetched now, their records at
 * the next batch; see tally_step), which keeps their order. -1 when out of memory. */
static int tally_batch(Tally *y) {
    if (tally_step(y) < 0) return -1; /* (the older batch to the table, making room) */
    Table *t = y->table;
    Pending *miss = y->waiting[y->older ^ 1];
    int nmiss = 0;
    for (int c = 0; c < y->nfresh; c++) {
        const Pending *f = &y->fresh[c];
        if (f->len <= FRONT_MAX && front_hit(t, &y->front[f->key], f->w0, f->w1, f->len)) continue;
        Pending *m = &miss[nmiss++];
        *m = *f;
        m->h = hash_bytes(m->at, m->len);
        PREFETCH(&t->slots[home_slot(t, m->h)]);
    }
    y->nwaiting[y->older ^ 1] = nmiss;
    y->nfresh = 0;
    return 0;
}

/* Every chunk met so far into the table: before the text they point into goes, and before a new
 * unit (whose records must follow this one's). */
int tally_drain(Tally *y) {
    return tally_batch(y) < 0 || tally_step(y) < 0 || tally_step(y) < 0 ? -1 : 0;
}

/* Count the chunks p[start:ends[0]], p[ends[0]:ends[1]], ... (from the scanner), in passes over
 * batches of chunks (of any documents) so that the memory loads of many chunks overlap instead of
 * waiting one for another: a chunk's front-cache entry is prefetched here, looked up when its batch
 * is full (tally_batch). The chunks keep pointing into their text until they are drained. -1 when
 * out of memory. */
int count_chunks(Tally *y, const uint8_t *p, Py_ssize_t start, const Py_ssize_t *ends, Py_ssize_t k,
                 const uint8_t *readable) {
    for (Py_ssize_t c = 0; c < k; start = ends[c++]) {
        uint64_t n = (uint64_t)(ends[c] - start), w0 = 0, w1 = 0, key = 0;
        if (n <= FRONT_MAX) {
            key = front_key(p + start, n, readable, &w0, &w1);
            PREFETCH(&y->front[key]);
        }
        y->fresh[y->nfresh++] = (Pending){p + start, n, w0, w1, 0, key};
        if (y->nfresh == SCAN_BATCH && tally_batch(y) < 0) return -1;
    }
    return 0;
}

