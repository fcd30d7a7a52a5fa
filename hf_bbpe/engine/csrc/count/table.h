/*
 * A thread's table, the small hot helpers (inline): a record's count and bytes, a chunk's slot,
 * and the front cache's key and hit. tally.c counts with them, table.c makes and grows tables.
 */
#ifndef HF_BBPE_COUNT_TABLE_H
#define HF_BBPE_COUNT_TABLE_H

#include "common/hash.h"
#include "count/count.h"

static inline uint64_t load_count(const uint8_t *record) {
    uint64_t c;
    memcpy(&c, record, 8);
    return c;
}
static inline void store_count(uint8_t *record, uint64_t c) { memcpy(record, &c, 8); }

/* The bytes of a record and their length. */
static inline const uint8_t *record_chunk(const uint8_t *record, uint64_t *len) {
    const uint8_t *q = record + 8;
    uint64_t v = 0;
    int shift = 0;
    while (*q & 0x80) {
        v |= (uint64_t)(*q++ & 0x7F) << shift;
        shift += 7;
    }
    *len = v | (uint64_t)*q++ << shift;
    return q;
}


static inline uint64_t home_slot(const Table *t, uint64_t h) { return h >> (64 - t->bits); }

/* The slot of chunk p[0:n] with hash h: its record's slot, or the empty slot where it goes. */
static inline uint64_t *table_slot(const Table *t, const uint8_t *p, uint64_t n, uint64_t h) {
    uint64_t tag = h >> TAG_SHIFT, i = home_slot(t, h);
    for (;; i = (i + 1) & t->mask) {
        uint64_t s = t->slots[i];
        if (!s) return &t->slots[i];
        if (s >> TAG_SHIFT == tag) {
            uint64_t len;
            const uint8_t *q = record_chunk(t->arena + (s & OFFSET_MASK) - 1, &len);
            if (len == n && memcmp(q, p, n) == 0) return &t->slots[i];
        }
    }
}

static inline void front_flush(Table *t, Front *e) {
    if (e->pending) {
        uint8_t *record = t->arena + e->record - 1;
        store_count(record, load_count(record) + e->pending);
        e->pending = 0;
    }
}

/* The front-cache key of chunk p[0:n] (n <= FRONT_MAX): its bytes zero-padded in *w0, *w1, and
 * its entry. p[0:16] may be read when p + 16 <= readable. */
static inline uint64_t front_key(const uint8_t *p, uint64_t n, const uint8_t *readable, uint64_t *w0, uint64_t *w1) {
    /* (the masks keep the chunk's n bytes of the two words: the first 8, then the rest) */
#define LOW_MASK(n) ((n) >= 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * (n))) - 1)
#define HIGH_MASK(n) ((n) <= 8 ? 0 : (n) >= 16 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * ((n) - 8))) - 1)
    static const uint64_t low[FRONT_MAX + 1] = {LOW_MASK(0), LOW_MASK(1), LOW_MASK(2), LOW_MASK(3), LOW_MASK(4),
        LOW_MASK(5), LOW_MASK(6), LOW_MASK(7), LOW_MASK(8), LOW_MASK(9), LOW_MASK(10), LOW_MASK(11), LOW_MASK(12),
        LOW_MASK(13), LOW_MASK(14), LOW_MASK(15), LOW_MASK(16)};
    static const uint64_t high[FRONT_MAX + 1] = {HIGH_MASK(0), HIGH_MASK(1), HIGH_MASK(2), HIGH_MASK(3),
        HIGH_MASK(4), HIGH_MASK(5), HIGH_MASK(6), HIGH_MASK(7), HIGH_MASK(8), HIGH_MASK(9), HIGH_MASK(10),
        HIGH_MASK(11), HIGH_MASK(12), HIGH_MASK(13), HIGH_MASK(14), HIGH_MASK(15), HIGH_MASK(16)};
    if (p + 16 <= readable) {
        memcpy(w0, p, 8);
        memcpy(w1, p + 8, 8);
        *w0 &= low[n];
        *w1 &= high[n];
    } else {
        uint8_t b[16] = {0};
        memcpy(b, p, n);
        memcpy(w0, b, 8);
        memcpy(w1, b + 8, 8);
    }
    return ((*w0 ^ (*w1 * UINT64_C(0x9E3779B97F4A7C15)) ^ n) * UINT64_C(0xD6E8FEB86659FD93)) >> (64 - FRONT_BITS);
}

static inline int front_hit(Table *t, Front *e, uint64_t w0, uint64_t w1, uint64_t n) {
    if ((e->w0 ^ w0) | (e->w1 ^ w1) | (e->len ^ n)) return 0; /* (an empty entry has length 0) */
    if (++e->pending == UINT32_MAX) front_flush(t, e);
    return 1;
}

#endif
