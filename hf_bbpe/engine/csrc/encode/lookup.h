/*
 * The kernel's hot look-ups, inline: byte strings compared and hashed, the vocabulary and the
 * piece cache probed, a pair's rank (pair table behind its Bloom filter), the front cache's keys
 * and the seed table, and a scanner's batch of chunk ends.
 */
#ifndef HF_BBPE_ENCODE_LOOKUP_H
#define HF_BBPE_ENCODE_LOOKUP_H

#include "encode/encode.h"

/* Whether a[0:n] == b[0:n]: short strings by a few overlapping loads, inline, without reading
 * past either end (the pieces a cache miss compares are mostly short). */
static inline int bytes_equal(const uint8_t *a, const uint8_t *b, Py_ssize_t n) {
    if (n >= 8 && n <= 16) {
        uint64_t x0, y0, x1, y1;
        memcpy(&x0, a, 8); memcpy(&y0, b, 8);
        memcpy(&x1, a + n - 8, 8); memcpy(&y1, b + n - 8, 8);
        return ((x0 ^ y0) | (x1 ^ y1)) == 0;
    }
    if (n >= 4 && n < 8) {
        uint32_t x0, y0, x1, y1;
        memcpy(&x0, a, 4); memcpy(&y0, b, 4);
        memcpy(&x1, a + n - 4, 4); memcpy(&y1, b + n - 4, 4);
        return ((x0 ^ y0) | (x1 ^ y1)) == 0;
    }
    if (n < 4) return n == 0 || (a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1]);
    if (n <= 32) { /* the first 16 bytes and the last 16 */
        uint64_t x[4], y[4];
        memcpy(x, a, 16); memcpy(y, b, 16);
        memcpy(x + 2, a + n - 16, 16); memcpy(y + 2, b + n - 16, 16);
        return ((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3])) == 0;
    }
    return memcmp(a, b, (size_t)n) == 0;
}

/* The slot of the piece data[0:n] (hash h, mixed m): its entry, or the empty slot to fill. */
static inline PieceSlot *pcache_find(const PieceCache *c, uint64_t h, uint64_t m, const uint8_t *data, Py_ssize_t n) {
    for (uint64_t j = m & c->slot_mask;; j = (j + 1) & c->slot_mask) {
        PieceSlot *s = &c->slots[j];
        if (s->len == 0) return s;
        if (s->hash == h && s->len == n &&
            bytes_equal(c->arena + s->off + (size_t)s->nids * sizeof(int32_t), data, n))
            return s;
    }
}

/* Polynomial hash sum((p[i] + 1) * B^i): the hash of a concatenation x + y is
 * h(x) + B^len(x) * h(y). Four bytes a step in four sums (byte i in sum i % 4, times B^(i - i % 4)),
 * then h = sum0 + B sum1 + B^2 sum2 + B^3 sum3: the same value, without a multiply's latency per
 * byte (the chunks longer than the front cache's, which are hashed at every occurrence). */
static inline uint64_t bytes_hash(const uint8_t *p, Py_ssize_t n) {
    const uint64_t B2 = HASH_BASE * HASH_BASE, B3 = B2 * HASH_BASE, B4 = B2 * B2;
    uint64_t h0 = 0, h1 = 0, h2 = 0, h3 = 0, power = 1;
    Py_ssize_t i = 0;
    for (; i + 4 <= n; i += 4) {
        h0 += (uint64_t)(p[i] + 1) * power;
        h1 += (uint64_t)(p[i + 1] + 1) * power;
        h2 += (uint64_t)(p[i + 2] + 1) * power;
        h3 += (uint64_t)(p[i + 3] + 1) * power;
        power *= B4;
    }
    uint64_t h = h0 + HASH_BASE * h1 + B2 * h2 + B3 * h3;
    for (; i < n; i++) { h += (uint64_t)(p[i] + 1) * power; power *= HASH_BASE; }
    return h;
}

/* Index of the token equal to p[0:n] (m: mix64 of its hash), or -1. */
static inline int64_t token_lookup_mixed(const ChunkBPE *self, uint64_t m, const uint8_t *p, Py_ssize_t n) {
    uint64_t j = m & self->tok_mask;
    uint32_t tag = (uint32_t)(m >> 32);
    for (;;) {
        Slot s = self->slots[j];
        if (s.tok < 0) return -1;
        if (s.tag == tag && self->toks[s.tok].len == n &&
            bytes_equal(self->tok_buf + self->toks[s.tok].start, p, n))
            return s.tok;
        j = (j + 1) & self->tok_mask;
    }
}

/* Index of the token equal to p[0:n] (hash h), or -1. */
static inline int64_t token_lookup(const ChunkBPE *self, uint64_t h, const uint8_t *p, Py_ssize_t n) {
    return token_lookup_mixed(self, mix64(h), p, n);
}

/* "ranks" mode: the id of the token spelled by tokens a then b, or NO_MERGE. */
static inline int64_t rank_of_bytes(const ChunkBPE *self, int32_t a, int32_t b) {
    if (a < 0 || b < 0 || a > self->max_id || b > self->max_id) return NO_MERGE;
    int32_t ta = self->index_of[a], tb = self->index_of[b];
    if (ta < 0 || tb < 0) return NO_MERGE;
    int32_t la = self->toks[ta].len, lb = self->toks[tb].len;
    if (la + lb > self->max_len) return NO_MERGE;
    uint64_t m = mix64(self->tok_hash[ta] + self->powers[la] * self->tok_hash[tb]), j = m & self->tok_mask;
    uint32_t tag = (uint32_t)(m >> 32);
    const uint8_t *pa = self->tok_buf + self->toks[ta].start, *pb = self->tok_buf + self->toks[tb].start;
    for (;;) {
        Slot s = self->slots[j];
        if (s.tok < 0) return NO_MERGE;
        if (s.tag == tag && self->toks[s.tok].len == la + lb) {
            const uint8_t *pt = self->tok_buf + self->toks[s.tok].start;
            if (memcmp(pt, pa, (size_t)la) == 0 && memcmp(pt + la, pb, (size_t)lb) == 0)
                return self->toks[s.tok].id == self->unmergeable ? NO_MERGE : self->toks[s.tok].id;
        }
        j = (j + 1) & self->tok_mask;
    }
}

/* The first word of the slot where the pair's probe starts. */
static inline const uint64_t *pair_slot(const ChunkBPE *self, uint32_t a, uint32_t b) {
    uint64_t j = ((mix64(((uint64_t)a << 32) | b) >> 32) * self->pair_cap) >> 32;
    return self->pairs + j * (uint64_t)self->pair_words;
}

static inline uint64_t pair_key(const ChunkBPE *self, uint32_t a, uint32_t b) {
    return self->pair_words == 1 ? ((uint64_t)a << (2 * PAIR_BITS)) | ((uint64_t)b << PAIR_BITS) : ((uint64_t)a << 32) | b;
}

/* In front of the pair table, a Bloom filter of its pairs: one 64-bit word of it a pair, two bits
 * set in that word, about FILTER_BITS_PER_PAIR bits a pair (256 KB for cl100k). Most pairs the
 * merge loop asks about are no pair (the neighbours in a piece's final tokens), and the filter,
 * small enough for the L2 cache, turns away about 96% of them without the table's cache miss. */
#define FILTER_HASH 0xC2B2AE3D27D4EB4FULL
#define FILTER_BITS_PER_PAIR 8

static inline uint64_t filter_hash(uint32_t a, uint32_t b) { return (((uint64_t)a << 32) | b) * FILTER_HASH; }

/* The pair's two bits in its word (the middle bits of the product depend on both ids). */
static inline uint64_t filter_bits(uint64_t h) {
    return (UINT64_C(1) << ((h >> 32) & 63)) | (UINT64_C(1) << ((h >> 38) & 63));
}

static inline int pair_may_exist(const ChunkBPE *self, uint32_t a, uint32_t b) {
    uint64_t h = filter_hash(a, b), bits = filter_bits(h);
    return (self->pair_filter[h >> self->pair_filter_shift] & bits) == bits;
}

/* The merged id of a pair, exactly keyed: in "ranks" mode the table holds every split of every
 * token into two tokens, so it answers what rank_of_bytes would, in one probe. */
static inline int64_t rank_of(const ChunkBPE *self, int32_t a, int32_t b) {
    if (!self->pairs) return rank_of_bytes(self, a, b);
    if (!pair_may_exist(self, (uint32_t)a, (uint32_t)b)) return NO_MERGE;
    const uint64_t *s = pair_slot(self, (uint32_t)a, (uint32_t)b), *end = self->pairs + self->pair_cap * self->pair_words;
    uint64_t key = pair_key(self, (uint32_t)a, (uint32_t)b);
    if (self->pair_words == 1) {
        for (;;) {
            uint64_t w = *s;
            if (w == PAIR_EMPTY) return NO_MERGE;
            if ((w & ~PAIR_FIELD) == key) return (int64_t)(w & PAIR_FIELD);
            if (++s == end) s = self->pairs;
        }
    }
    for (;;) {
        if (s[0] == PAIR_EMPTY) return NO_MERGE;
        if (s[0] == key) return (int64_t)s[1];
        if ((s += 2) == end) s = self->pairs;
    }
}


static inline int64_t rank_below(const ChunkBPE *self, int32_t a, int32_t b, int64_t limit) {
    int64_t r = rank_of(self, a, b);
    return r < limit ? r : NO_MERGE;
}

/* The key words of the piece data[0:n] (n <= FRONT_MAX_PIECE): its bytes, little-endian, zero
 * after the end. overread: the 16 bytes from data on may be read (one load per word). */
static inline void front_words(const uint8_t *data, Py_ssize_t n, int overread, uint64_t *w0, uint64_t *w1) {
    uint64_t a = 0, b = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* the bytes of a piece of n bytes in each word, without a branch on n */
    static const uint64_t MASKS[FRONT_MAX_PIECE + 1][2] = {
        {0, 0}, {0xFFULL, 0}, {0xFFFFULL, 0}, {0xFFFFFFULL, 0}, {0xFFFFFFFFULL, 0}, {0xFFFFFFFFFFULL, 0},
        {0xFFFFFFFFFFFFULL, 0}, {0xFFFFFFFFFFFFFFULL, 0}, {~0ULL, 0}, {~0ULL, 0xFFULL}, {~0ULL, 0xFFFFULL},
        {~0ULL, 0xFFFFFFULL}, {~0ULL, 0xFFFFFFFFULL}, {~0ULL, 0xFFFFFFFFFFULL}, {~0ULL, 0xFFFFFFFFFFFFULL},
        {~0ULL, 0xFFFFFFFFFFFFFFULL}, {~0ULL, ~0ULL}};
    if (overread) {
        memcpy(&a, data, 8);
        memcpy(&b, data + 8, 8);
        *w0 = a & MASKS[n][0];
        *w1 = b & MASKS[n][1];
        return;
    }
#else
    (void)overread;
#endif
    for (Py_ssize_t i = 0; i < n && i < 8; i++) a |= (uint64_t)data[i] << (8 * i);
    for (Py_ssize_t i = 8; i < n; i++) b |= (uint64_t)data[i] << (8 * (i - 8));
    *w0 = a;
    *w1 = b;
}

/* The hash of the piece of n bytes with key words w0, w1: its top bits pick its front-cache set
 * and its seed-table slot. */
static inline uint64_t front_hash(uint64_t w0, uint64_t w1, Py_ssize_t n) {
    return ((w0 * HASH_BASE) ^ (w1 + (uint64_t)n)) * 0xC2B2AE3D27D4EB4FULL;
}

/* The front-cache set (two slots) of the piece with front_hash k. */
static inline FrontSlot *front_at(const PieceCache *cache, uint64_t k) {
    return &cache->front[2 * (k >> (65 - cache->front_bits))];
}

/* The seed table's first slot to probe for the piece with front_hash k. */
static inline uint64_t seed_at(const ChunkBPE *self, uint64_t k) {
    return k >> (64 - self->seed_bits);
}

/* The token id of the piece of n (2 .. FRONT_MAX_PIECE) bytes with key words w0, w1, from the seed
 * table (slot j first, see seed_at), or -1: then the piece is no token. */
static inline int32_t seed_find(const ChunkBPE *self, uint64_t j, uint64_t w0, uint64_t w1, Py_ssize_t n) {
    for (;; j = (j + 1) & self->seed_mask) {
        const FrontSlot *s = &self->seed[j];
        if (s->w0 == w0 && s->w1 == w1 && s->len == (uint16_t)n) return s->ids[0];
        if (s->len == 0) return -1;
    }
}

/* Keep the m ids of the piece of n bytes with keys w0, w1 in its front-cache set (NULL: none),
 * first: the ids themselves, or where they are in the piece cache's arena (off; -1: nowhere, and
 * a piece of more than FRONT_IDS ids is not kept). */
static inline void front_put(FrontSlot *front, uint64_t w0, uint64_t w1, Py_ssize_t n, const int32_t *ids,
                             Py_ssize_t m, int64_t off) {
    if (!front || (m > FRONT_IDS && off < 0)) return;
    if (front->w0 != w0 || front->w1 != w1 || front->len != (uint16_t)n) front[1] = front[0]; /* the older goes */
    front->w0 = w0;
    front->w1 = w1;
    front->len = (uint16_t)n;
    front->nids = (uint16_t)m;
    if (m > FRONT_IDS) front->ids[0] = (int32_t)off;
    else for (Py_ssize_t k = 0; k < m; k++) front->ids[k] = ids[k];
}

/* Whether a piece of n bytes is encoded by parts (see encode_by_parts) when cache is held (once the
 * scanners' class table is there). */
static inline int by_parts(const ChunkBPE *self, Py_ssize_t n, const PieceCache *cache) {
    return cache && self->part_scanner && n > FRONT_MAX_PIECE && *self->part_scanner->classes;
}

/* The ends of up to max chunks from i < t->n on (see PretokScanner.chunks): the scanner's batch
 * function when it has one. */
static inline Py_ssize_t chunk_ends(const PretokScanner *scanner, const PretokText *t, Py_ssize_t i, Py_ssize_t *ends,
                                    Py_ssize_t max) {
    if (scanner->chunks) return scanner->chunks(t, i, ends, max);
    Py_ssize_t k = 0;
    while (k < max && i < t->n) ends[k++] = i += scanner->chunk(t, i);
    return k;
}
#endif
