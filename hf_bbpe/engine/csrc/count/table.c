/*
 * A thread's table, the cold part (table.h holds what counting calls per chunk): made, freed,
 * grown, and cut into units' segments.
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

/* An empty table (small when its limit is small: tests spill after a few records). */
int table_init_limited(Table *t, uint64_t limit, Spill *spill) {
    memset(t, 0, sizeof *t);
    int small = limit && limit < (UINT64_C(1) << 24);
    t->bits = small ? 6 : 16;
    t->mask = ((uint64_t)1 << t->bits) - 1;
    t->slots = calloc(t->mask + 1, sizeof(uint64_t));
    t->cap = small ? 1 << 10 : 1 << 20;
    t->arena = malloc(t->cap);
    t->limit = limit;
    t->spill = spill;
    if (!t->slots || !t->arena) return -1;
    return 0;
}

int table_init(Table *t) { return table_init_limited(t, 0, NULL); }

void table_free(Table *t) {
    free(t->slots);
    free(t->arena);
    free(t->segs);
    memset(t, 0, sizeof *t);
}


/* Twice the slots of an open-addressing table over arena[0:len), whose records are `head` bytes
 * and then a count and its chunk (record_chunk's layout). A slot's tag is the top bits of its
 * chunk's hash, where its first slot comes from: up to 2**TAG_BITS slots, the slots are read in
 * order and written nearly in order (first slots keep their order); past that, every record is
 * hashed again, walking the arena. */
int slots_grow(uint64_t **slots_io, uint64_t *mask_io, int *bits_io, const uint8_t *arena, uint64_t len,
               uint64_t head) {
    int bits = *bits_io + 1;
    uint64_t old_mask = *mask_io, mask = old_mask * 2 + 1, *old = *slots_io;
    uint64_t *slots = calloc(mask + 1, sizeof(uint64_t));
    if (!slots) return -1;
    if (bits <= TAG_BITS) {
        for (uint64_t j = 0; j <= old_mask; j++) {
            uint64_t s = old[j];
            if (!s) continue;
            uint64_t i = (s >> TAG_SHIFT) >> (TAG_BITS - bits);
            while (slots[i]) i = (i + 1) & mask;
            slots[i] = s;
        }
    } else {
        for (uint64_t off = 0; off < len;) {
            uint64_t n;
            const uint8_t *q = record_chunk(arena + off + head, &n);
            uint64_t h = hash_bytes(q, n), i = h >> (64 - bits);
            while (slots[i]) i = (i + 1) & mask;
            slots[i] = (h >> TAG_SHIFT) << TAG_SHIFT | (off + 1);
            off = (uint64_t)(q - arena) + n;
        }
    }
    free(old);
    *slots_io = slots;
    *mask_io = mask;
    *bits_io = bits;
    return 0;
}

int table_grow(Table *t) { return slots_grow(&t->slots, &t->mask, &t->bits, t->arena, t->len, 0); }


/* The records from here on belong to unit u. */
int table_segment(Table *t, int64_t u) {
    if (t->nsegs && t->segs[t->nsegs - 1].arena_offset == t->len) { /* the last unit added nothing */
        t->segs[t->nsegs - 1].unit = u;
        return 0;
    }
    if (t->nsegs == t->capsegs) {
        size_t cap = t->capsegs ? t->capsegs * 2 : 64;
        Segment *segs = realloc(t->segs, cap * sizeof(Segment));
        if (!segs) return -1;
        t->segs = segs;
        t->capsegs = cap;
    }
    t->segs[t->nsegs++] = (Segment){t->len, u};
    return 0;
}

