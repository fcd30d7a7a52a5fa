/*
 * The BPE merge loop (hot path of training), called from hf_bbpe/trainer.py. merge_loop.py is
 * the same function in readable Python (its module doc gives the algorithm and the three
 * tie-break rules); this file keeps the same state in less memory:
 *
 * - Symbols. The words lie end to end in one byte arena: the input symbols themselves (uint8
 *   one byte each, int32 four bytes each), copied, or used in place with consume=True. A
 *   position is a byte offset and never moves: a merge makes its two symbols one symbol that
 *   spans the bytes of both. A bitmap marks where symbols start, another where words start (a
 *   rank directory over it gives a position's word, hence its count). A symbol's id is written
 *   in its own bytes: a lone byte is its value, a longer symbol holds the id little-endian in
 *   min(span, 4) bytes, and the rare id too large for a 2- or 3-byte span is kept in a small
 *   overflow table. 1.31 bytes per input byte (0.31 in place), against 16 in linked int32 lists.
 * - Pairs. A tracked pair has a 32-byte record: count, ids, and the positions of its left
 *   symbol in increasing order (the first in the record, the gaps as varints in one pool that is
 *   compacted in place). A position goes stale when a neighbouring merge consumes it; it is
 *   checked when read. Records are found by an open-addressing index of 8-byte slots.
 * - Untracked pairs. A pair whose count is below a threshold when it first appears (at the
 *   start, or in the merge that makes its newer token) gets no record: counts of existing pairs
 *   only fall, so it cannot be merged while the best tracked count is at or above the threshold.
 *   When the best falls below (or, under BpeTrainer's rules, when an entry below it comes up:
 *   there an out-of-date entry may stand for a larger count), the arena is scanned again and the
 *   untracked pairs that reach a lower threshold (a quarter, down to min_frequency, or to 1 under
 *   BpeTrainer's rules) are counted and tracked. Most pairs that merges create are rare and never
 *   tracked.
 * - The heap holds one 16-byte entry per tracked pair (count, 32-bit tie key, record): the left
 *   id (or its rank, or the pair's first position), with the right id (or its rank) read from the
 *   record on a tie. Updates are lazy, as in the twin: a popped entry whose count or key is out of
 *   date is pushed back with the current one.
 * - A merge walks its pair's positions left to right, reading ahead (prefetching what the next
 *   positions need), and rewrites each valid occurrence in place; the pairs it creates (they
 *   contain the new id) are counted in a small table of their own, with a log of where each
 *   gained, and the counts the pairs around the occurrences lose in another. After the pass the
 *   losses are taken from the records (one look-up per pair), and the created pairs that reach
 *   the threshold get records, heap entries, and their positions from the log (a merge too large
 *   for the log finds them by walking its merged positions again).
 * - The first scan, while every symbol is a byte, indexes the 65,536 byte pairs directly.
 * - The first scans, while every symbol is an input token id (int32: extension, SuperBPE's stage
 *   2), read the input word by word instead of the bitmaps, fetching the count sketch's counters
 *   ahead of use, and the scan that writes the new records' positions looks up only the pairs the
 *   sketch lets through (stage 2's setup: 0.54 s down to 0.38 s on 7.5M ids).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

#if defined(__GNUC__) || defined(__clang__)
#define CTZ64(x) __builtin_ctzll(x)
#define CLZ64(x) __builtin_clzll(x)
#else
static inline int CTZ64(uint64_t x) { int k = 0; while (!(x & 1)) x >>= 1, k++; return k; }
static inline int CLZ64(uint64_t x) { int k = 0; while (!(x >> 63)) x <<= 1, k++; return k; }
#endif

/* In registers (the build targets no CPU with a popcount instruction, and libgcc's is a call). */
static inline uint64_t popcount64(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (x * 0x0101010101010101ULL) >> 56;
}

#define NONE UINT32_MAX           /* no position, no record */
#define MAX_ARENA (UINT32_MAX - 64) /* positions are uint32 below NONE, with room for the guard bit */
#define VETOED (INT64_MIN / 2)    /* count of a pair allow_pair rejected: never positive again */
/* Sizes that change how much memory is used, never the merges; _tune sets them for the tests. */
static int64_t first_threshold = 16;     /* pairs below this count when they appear are not tracked at first */
static uint64_t min_budget = 1 << 16;    /* candidates counted at once when tracking (more: the scan is split) */
static uint64_t compact_bytes = 1 << 18; /* garbage in the pool (and a quarter of it) that makes it compact */
static uint64_t min_log = 1 << 16;       /* a merge's log of created pairs holds this many entries, or n / 16 */
#define MAX_PARTS (1 << 24)       /* a tracking scan is split by 24 bits of the pair's hash at most */
#define AHEAD 16                  /* positions a merge reads ahead of the one it merges */
#define SPAN2_OVERFLOW 0xFFFFu
#define SPAN3_OVERFLOW 0xFFFFFFu

/* ------------------------------------------------------------------------- the arena */

typedef struct {
    uint8_t *bytes;
    uint64_t *starts;      /* bit p: a symbol starts at p; a guard bit at n */
    uint64_t *word_starts; /* bit p: a word starts at p; a guard bit at n */
    uint32_t *word_rank;   /* words that start before position 64 k */
    uint64_t n;
    uint32_t *ovf_keys;    /* overflow ids: position -> id (NONE: empty slot) */
    int32_t *ovf_vals;
    uint64_t ovf_cap, ovf_size;
} Arena;

static inline int bit(const uint64_t *bits, uint64_t p) { return (int)((bits[p >> 6] >> (p & 63)) & 1); }

/* The first set bit after p (the guard bit at n ends the search). */
static inline uint64_t next_set(const uint64_t *bits, uint64_t p) {
    uint64_t q = p + 1, k = q >> 6;
    uint64_t w = bits[k] & (~0ULL << (q & 63));
    while (!w) w = bits[++k];
    return (k << 6) | (uint64_t)CTZ64(w);
}

/* The last set bit before p (called where one exists: p is not the start of its word). */
static inline uint64_t prev_set(const uint64_t *bits, uint64_t p) {
    uint64_t q = p - 1, k = q >> 6;
    uint64_t w = bits[k] & (~0ULL >> (63 - (q & 63)));
    while (!w) w = bits[--k];
    return (k << 6) | (uint64_t)(63 - CLZ64(w));
}

/* The rank of the word that position p belongs to, among the words that are not empty. */
static inline uint64_t word_of(const Arena *ar, uint64_t p) {
    return ar->word_rank[p >> 6] + popcount64(ar->word_starts[p >> 6] & (~0ULL >> (63 - (p & 63)))) - 1;
}

static int32_t ovf_get(const Arena *ar, uint32_t p) {
    uint64_t j = mix64(p) & (ar->ovf_cap - 1);
    while (ar->ovf_keys[j] != p) j = (j + 1) & (ar->ovf_cap - 1);
    return ar->ovf_vals[j];
}

static int ovf_put(Arena *ar, uint32_t p, int32_t id) {
    if ((ar->ovf_size + 1) * 2 > ar->ovf_cap) {
        uint64_t cap = ar->ovf_cap ? ar->ovf_cap * 2 : 1024;
        uint32_t *keys = malloc(cap * sizeof(uint32_t));
        int32_t *vals = malloc(cap * sizeof(int32_t));
        if (!keys || !vals) { free(keys); free(vals); return -1; }
        memset(keys, 0xff, cap * sizeof(uint32_t));
        for (uint64_t i = 0; i < ar->ovf_cap; i++) {
            if (ar->ovf_keys[i] == NONE) continue;
            uint64_t j = mix64(ar->ovf_keys[i]) & (cap - 1);
            while (keys[j] != NONE) j = (j + 1) & (cap - 1);
            keys[j] = ar->ovf_keys[i];
            vals[j] = ar->ovf_vals[i];
        }
        free(ar->ovf_keys);
        free(ar->ovf_vals);
        ar->ovf_keys = keys;
        ar->ovf_vals = vals;
        ar->ovf_cap = cap;
    }
    uint64_t j = mix64(p) & (ar->ovf_cap - 1);
    while (ar->ovf_keys[j] != NONE && ar->ovf_keys[j] != p) j = (j + 1) & (ar->ovf_cap - 1);
    if (ar->ovf_keys[j] == NONE) ar->ovf_size++;
    ar->ovf_keys[j] = p;
    ar->ovf_vals[j] = id;
    return 0;
}

/* Remove position p (linear probing: later entries of the run move back into the gap). */
static void ovf_del(Arena *ar, uint32_t p) {
    uint64_t mask = ar->ovf_cap - 1, j = mix64(p) & mask;
    while (ar->ovf_keys[j] != p) j = (j + 1) & mask;
    uint64_t hole = j;
    for (j = (j + 1) & mask; ar->ovf_keys[j] != NONE; j = (j + 1) & mask) {
        uint64_t home = mix64(ar->ovf_keys[j]) & mask;
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            ar->ovf_keys[hole] = ar->ovf_keys[j];
            ar->ovf_vals[hole] = ar->ovf_vals[j];
            hole = j;
        }
    }
    ar->ovf_keys[hole] = NONE;
    ar->ovf_size--;
}

/* Whether the symbol at p, spanning span bytes, keeps its id in the overflow table. */
static inline int overflows(const Arena *ar, uint64_t p, uint64_t span) {
    const uint8_t *s = ar->bytes + p;
    if (span == 2) return s[0] == 0xFF && s[1] == 0xFF;
    if (span == 3) return s[0] == 0xFF && s[1] == 0xFF && s[2] == 0xFF;
    return 0;
}

static inline int32_t read_id(const Arena *ar, uint64_t p, uint64_t span) {
    const uint8_t *s = ar->bytes + p;
    if (span == 1) return s[0];
    if (span == 2) {
        uint32_t v = s[0] | (uint32_t)s[1] << 8;
        return v == SPAN2_OVERFLOW ? ovf_get(ar, (uint32_t)p) : (int32_t)v;
    }
    if (span == 3) {
        uint32_t v = s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16;
        return v == SPAN3_OVERFLOW ? ovf_get(ar, (uint32_t)p) : (int32_t)v;
    }
    int32_t v;
    memcpy(&v, s, 4);  /* native, as the int32 input is */
    return v;
}

/* Write id x (a merge's, so span >= 2) for the symbol at p. */
static inline int write_id(Arena *ar, uint64_t p, uint64_t span, int32_t x) {
    uint8_t *s = ar->bytes + p;
    uint32_t v = (uint32_t)x;
    if (span == 2 || span == 3) {
        uint32_t limit = span == 2 ? SPAN2_OVERFLOW : SPAN3_OVERFLOW;
        if (v >= limit) {
            memset(s, 0xFF, span);
            return ovf_put(ar, (uint32_t)p, x);
        }
        s[0] = (uint8_t)v;
        s[1] = (uint8_t)(v >> 8);
        if (span == 3) s[2] = (uint8_t)(v >> 16);
        return 0;
    }
    memcpy(s, &x, 4);
    return 0;
}

/* ------------------------------------------------------------- pairs, heap, positions */

typedef struct {
    int64_t count;
    int32_t a, b;
    uint32_t first;  /* first position (NONE: no position left) */
    uint32_t gaps;   /* bytes of varint gaps to the next positions, at pool + off */
    uint64_t off;
} Pair;

typedef struct {
    uint32_t tag;    /* high half of the pair's hash */
    uint32_t pair;   /* NONE: empty */
} Slot;

typedef struct {
    int64_t count;
    uint32_t key;    /* left id, its rank, or the first position; a tie reads the record */
    uint32_t pair;
} HeapItem;

/* A pair counted by a scan or by a merge before it is tracked: its positions so far. */
typedef struct {
    uint64_t key;    /* a << 32 | b */
    int64_t count;
    uint32_t first, last, gaps;
    uint32_t pair;   /* its record once tracked, else NONE */
} Candidate;

typedef struct {
    Candidate *items;  /* in the order they were added; found through slots */
    uint64_t size, cap_items;
    uint32_t *slots;   /* an index in items; NONE: empty */
    uint64_t cap;      /* a power of 2 */
} CandidateTable;

typedef struct {
    Arena ar;
    const int64_t *wcount;
    uint32_t *word_index;  /* rank among non-empty words -> word, where some words are empty */
    Pair *pairs;
    uint64_t npairs, cap_pairs;
    Slot *slots;
    uint64_t slot_cap, slot_used;
    HeapItem *heap;
    uint64_t heap_len, heap_cap;
    uint8_t *pool;
    uint64_t pool_len, pool_cap, garbage;
    int by_occurrence;
    int bytes_only;        /* every symbol is one byte (uint8 input, nothing merged yet) */
    const int32_t *ranks;  /* BpeTrainer's rules when not NULL */
    int64_t nranks;
    int64_t threshold, floor;
    int token_pairs;      /* the input symbols are token ids (int32), whose distinct pairs may be millions */
    int pristine;         /* token ids and no merge yet: the arena is the int32 input as it came */
    const int32_t *lengths;  /* the input's words (symbols each), while pristine */
    int64_t nwords;
    CandidateTable made;  /* a merge's scratch: the pairs it creates */
    CandidateTable lost;  /* and what the pairs around its occurrences lose (counts only) */
    uint64_t *log;        /* and where each created pair gained, in order: made's index << 32 | position */
    uint64_t log_len, log_cap, log_max;  /* log_len > log_max: the merge outgrew the log */
} State;

static inline uint64_t pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }

static inline uint32_t rank(const State *s, int32_t id) {
    return id < s->nranks ? (uint32_t)s->ranks[id] : (uint32_t)id;
}

/* The count the heap orders by: the pair's count, or BpeTrainer's i32 view of it as a u64. */
static inline int64_t heap_count(const State *s, int64_t count) {
    return s->ranks ? (int64_t)(uint32_t)count : count;
}

/* Whether a pair with this count is queued (at the start, or when a merge created it). */
static inline int queued(const State *s, int64_t count) {
    return s->ranks ? (int32_t)(uint32_t)count > 0 : count > 0;
}

static inline int64_t word_count(const State *s, uint64_t p) {
    uint64_t w = word_of(&s->ar, p);
    return s->wcount[s->word_index ? s->word_index[w] : w];
}

static inline unsigned varint_len(uint64_t v) {
    unsigned n = 1;
    while (v >= 0x80) v >>= 7, n++;
    return n;
}

static inline uint8_t *put_varint(uint8_t *d, uint64_t v) {
    while (v >= 0x80) *d++ = (uint8_t)(v | 0x80), v >>= 7;
    *d++ = (uint8_t)v;
    return d;
}

static inline uint64_t get_varint(const uint8_t **src) {
    const uint8_t *d = *src;
    uint64_t v = 0;
    int shift = 0;
    while (*d & 0x80) v |= (uint64_t)(*d++ & 0x7F) << shift, shift += 7;
    v |= (uint64_t)*d++ << shift;
    *src = d;
    return v;
}

/* The record of pair (a, b), or NONE if it is not tracked. */
static inline uint32_t find_pair(const State *s, int32_t a, int32_t b) {
    if (!s->slot_cap) return NONE;
    uint64_t h = mix64(pair_key(a, b)), mask = s->slot_cap - 1;
    uint32_t tag = (uint32_t)(h >> 32);
    for (uint64_t j = h & mask;; j = (j + 1) & mask) {
        const Slot *slot = &s->slots[j];
        if (slot->pair == NONE) return NONE;
        if (slot->tag == tag && s->pairs[slot->pair].a == a && s->pairs[slot->pair].b == b) return slot->pair;
    }
}

static int slots_grow(State *s) {
    uint64_t cap = s->slot_cap ? s->slot_cap * 2 : 1 << 12;
    Slot *slots = malloc(cap * sizeof(Slot));
    if (!slots) return -1;
    for (uint64_t i = 0; i < cap; i++) slots[i].pair = NONE;
    for (uint64_t i = 0; i < s->slot_cap; i++) {
        if (s->slots[i].pair == NONE) continue;
        const Pair *p = &s->pairs[s->slots[i].pair];
        uint64_t j = mix64(pair_key(p->a, p->b)) & (cap - 1);
        while (slots[j].pair != NONE) j = (j + 1) & (cap - 1);
        slots[j] = s->slots[i];
    }
    free(s->slots);
    s->slots = slots;
    s->slot_cap = cap;
    return 0;
}

/* A new record for (a, b), which is not tracked yet; NONE on allocation failure. */
static uint32_t add_pair(State *s, int32_t a, int32_t b, int64_t count) {
    if ((s->slot_used + 1) * 4 > s->slot_cap * 3 && slots_grow(s) < 0) return NONE;
    if (s->npairs == s->cap_pairs) {
        uint64_t cap = s->cap_pairs ? s->cap_pairs * 2 : 1 << 12;
        if (cap >= NONE) return NONE;
        Pair *pairs = realloc(s->pairs, cap * sizeof(Pair));
        if (!pairs) return NONE;
        s->pairs = pairs;
        s->cap_pairs = cap;
    }
    uint32_t idx = (uint32_t)s->npairs++;
    Pair *p = &s->pairs[idx];
    p->count = count;
    p->a = a;
    p->b = b;
    p->first = NONE;
    p->gaps = 0;
    p->off = s->pool_len;
    uint64_t h = mix64(pair_key(a, b)), mask = s->slot_cap - 1, j = h & mask;
    while (s->slots[j].pair != NONE) j = (j + 1) & mask;
    s->slots[j].tag = (uint32_t)(h >> 32);
    s->slots[j].pair = idx;
    s->slot_used++;
    return idx;
}

/* Room for n more bytes of gaps at the end of the pool; returns its offset, or UINT64_MAX. */
static uint64_t pool_take(State *s, uint64_t n) {
    if (s->pool_len + n > s->pool_cap) {
        uint64_t cap = s->pool_cap ? s->pool_cap : 1 << 16;
        while (cap < s->pool_len + n) cap += cap / 2;
        uint8_t *pool = realloc(s->pool, cap);
        if (!pool) return UINT64_MAX;
        s->pool = pool;
        s->pool_cap = cap;
    }
    uint64_t off = s->pool_len;
    s->pool_len += n;
    return off;
}

/* Drop a pair's positions: it was merged, vetoed, or no occurrence of it is left. */
static inline void release_positions(State *s, Pair *p) {
    s->garbage += p->gaps;
    p->gaps = 0;
    p->first = NONE;
}

/* Move the live gaps to the front of the pool. Lists lie in the order of their records (they
   are written when their record is made, and only ever shrink from the front), so one pass in
   record order packs them. */
static void pool_compact(State *s) {
    uint64_t w = 0;
    for (uint64_t i = 0; i < s->npairs; i++) {
        Pair *p = &s->pairs[i];
        if (!p->gaps) { p->off = w; continue; }
        if (p->off != w) memmove(s->pool + w, s->pool + p->off, p->gaps);
        p->off = w;
        w += p->gaps;
    }
    s->pool_len = w;
    s->garbage = 0;
    if (s->pool_cap > w + w / 2 + (1 << 16)) {
        uint64_t cap = w + w / 4 + (1 << 16);
        uint8_t *pool = realloc(s->pool, cap);
        if (pool) { s->pool = pool; s->pool_cap = cap; }
    }
}

static inline int better(const State *s, const HeapItem *x, const HeapItem *y) {
    if (x->count != y->count) return x->count > y->count;
    if (x->key != y->key) return x->key < y->key;
    if (s->by_occurrence) return x->pair < y->pair;
    int32_t bx = s->pairs[x->pair].b, by = s->pairs[y->pair].b;
    return s->ranks ? rank(s, bx) < rank(s, by) : (uint32_t)bx < (uint32_t)by;
}

/* A 4-ary heap: the four children of an entry share a cache line. */
static int heap_push(State *s, HeapItem item) {
    if (s->heap_len == s->heap_cap) {
        uint64_t cap = s->heap_cap ? s->heap_cap * 2 : 1 << 12;
        HeapItem *h = realloc(s->heap, cap * sizeof(HeapItem));
        if (!h) return -1;
        s->heap = h;
        s->heap_cap = cap;
    }
    uint64_t i = s->heap_len++;
    while (i > 0) {
        uint64_t parent = (i - 1) / 4;
        if (!better(s, &item, &s->heap[parent])) break;
        s->heap[i] = s->heap[parent];
        i = parent;
    }
    s->heap[i] = item;
    return 0;
}

static HeapItem heap_pop(State *s) {
    HeapItem top = s->heap[0];
    HeapItem last = s->heap[--s->heap_len];
    uint64_t i = 0, n = s->heap_len;
    for (;;) {
        uint64_t c = 4 * i + 1;
        if (c >= n) break;
        uint64_t best = c, end = c + 4 < n ? c + 4 : n;
        for (uint64_t k = c + 1; k < end; k++)
            if (better(s, &s->heap[k], &s->heap[best])) best = k;
        if (!better(s, &s->heap[best], &last)) break;
        s->heap[i] = s->heap[best];
        i = best;
    }
    if (n > 0) s->heap[i] = last;
    return top;
}

/* Whether (a, b) occurs at position i: a symbol a starts there and b follows in its word. */
static inline int occurs_at(const State *s, uint64_t i, int32_t a, int32_t b) {
    const Arena *ar = &s->ar;
    if (!bit(ar->starts, i)) return 0;
    uint64_t j = next_set(ar->starts, i);
    if (j >= ar->n || bit(ar->word_starts, j) || read_id(ar, i, j - i) != a) return 0;
    return read_id(ar, j, next_set(ar->starts, j) - j) == b;
}

/* The tie key: the left id, its rank, or the first position where the pair still occurs
   (dropping the stale positions before it). */
static uint32_t tie_key(State *s, Pair *p) {
    if (s->ranks) return rank(s, p->a);
    if (!s->by_occurrence) return (uint32_t)p->a;
    while (p->first != NONE && !occurs_at(s, p->first, p->a, p->b)) {
        if (!p->gaps) { p->first = NONE; break; }
        const uint8_t *d = s->pool + p->off;
        p->first += (uint32_t)get_varint(&d);
        uint64_t used = (uint64_t)(d - (s->pool + p->off));
        p->off += used;
        p->gaps -= (uint32_t)used;
        s->garbage += used;
    }
    return p->first;
}

static inline int push_pair(State *s, uint32_t idx) {
    Pair *p = &s->pairs[idx];
    if (!queued(s, p->count)) return 0;
    HeapItem item = {heap_count(s, p->count), tie_key(s, p), idx};
    return heap_push(s, item);
}

/* ------------------------------------------------------------------- candidate tables */

/* Empty the table (keeping its memory): through the items where they are few, else whole. */
static void candidates_clear(CandidateTable *t) {
    if (t->size * 8 < t->cap) {
        for (uint64_t i = 0; i < t->size; i++) {
            uint64_t j = mix64(t->items[i].key) & (t->cap - 1);
            while (t->slots[j] != i) j = (j + 1) & (t->cap - 1);
            t->slots[j] = NONE;
        }
    } else if (t->cap) {
        memset(t->slots, 0xff, t->cap * sizeof(uint32_t));
    }
    t->size = 0;
}

/* Index items 0 .. n - 1 anew in *slots (open addressing, linear probing), cap of them (a power
   of 2), item i at hash_of(items, i); 0, or -1 when out of memory (the old index is kept). */
static int index_items(uint32_t **slots, uint64_t *cap_out, uint64_t cap, uint64_t n,
                       uint64_t (*hash_of)(const void *, uint64_t), const void *items) {
    uint32_t *fresh = malloc(cap * sizeof(uint32_t));
    if (!fresh) return -1;
    memset(fresh, 0xff, cap * sizeof(uint32_t));
    for (uint64_t i = 0; i < n; i++) {
        uint64_t j = hash_of(items, i) & (cap - 1);
        while (fresh[j] != NONE) j = (j + 1) & (cap - 1);
        fresh[j] = (uint32_t)i;
    }
    free(*slots);
    *slots = fresh;
    *cap_out = cap;
    return 0;
}

static uint64_t candidate_hash(const void *items, uint64_t i) { return mix64(((const Candidate *)items)[i].key); }

static int candidates_rehash(CandidateTable *t, uint64_t cap) {
    return index_items(&t->slots, &t->cap, cap, t->size, candidate_hash, t->items);
}

/* A new candidate for key at the end of the items (not indexed); NONE on allocation failure. */
static uint32_t candidate_append(CandidateTable *t, uint64_t key) {
    if (t->size == t->cap_items) {
        uint64_t cap = t->cap_items ? t->cap_items * 2 : 1 << 10;
        if (cap >= NONE) return NONE;
        Candidate *items = realloc(t->items, cap * sizeof(Candidate));
        if (!items) return NONE;
        t->items = items;
        t->cap_items = cap;
    }
    uint32_t idx = (uint32_t)t->size++;
    Candidate *c = &t->items[idx];
    c->key = key;
    c->count = 0;
    c->first = c->last = NONE;
    c->gaps = 0;
    c->pair = NONE;
    return idx;
}

/* The index of the candidate for key, added if new; NONE on allocation failure. */
static uint32_t candidate(CandidateTable *t, uint64_t key) {
    if ((t->size + 1) * 2 > t->cap && candidates_rehash(t, t->cap ? t->cap * 2 : 1 << 10) < 0) return NONE;
    uint64_t mask = t->cap - 1, j = mix64(key) & mask;
    for (; t->slots[j] != NONE; j = (j + 1) & mask)
        if (t->items[t->slots[j]].key == key) return t->slots[j];
    uint32_t idx = candidate_append(t, key);
    if (idx != NONE) t->slots[j] = idx;
    return idx;
}

static inline uint32_t find_candidate(const CandidateTable *t, uint64_t key) {
    if (!t->cap) return NONE;
    uint64_t mask = t->cap - 1, j = mix64(key) & mask;
    for (; t->slots[j] != NONE; j = (j + 1) & mask)
        if (t->items[t->slots[j]].key == key) return t->slots[j];
    return NONE;
}

static void candidates_free(CandidateTable *t) {
    free(t->items);
    free(t->slots);
}

static inline void candidate_position(Candidate *c, uint32_t pos) {
    if (c->first == NONE) c->first = pos;
    else c->gaps += varint_len(pos - c->last);
    c->last = pos;
}

/* Records for the candidates that reach the threshold, in the table's order, each with room for
   c->gaps bytes of gaps (so the pool keeps the order of the records); c->pair is then the record.
   Their positions are written next, with write_position. */
static int promote(State *s, CandidateTable *t) {
    for (uint64_t i = 0; i < t->size; i++) {
        Candidate *c = &t->items[i];
        if (c->first == NONE || c->count < s->threshold) continue;
        uint32_t idx = add_pair(s, (int32_t)(c->key >> 32), (int32_t)(uint32_t)c->key, c->count);
        if (idx == NONE) return -1;
        uint64_t off = pool_take(s, c->gaps);
        if (off == UINT64_MAX) return -1;
        s->pairs[idx].off = off;  /* first = NONE, gaps = 0: they grow as positions are written */
        c->pair = idx;
    }
    return 0;
}

/* The next position of a new record (its room in the pool is taken), after *last. */
static inline void append_position(State *s, Pair *p, uint32_t *last, uint32_t pos) {
    if (p->first == NONE) {
        p->first = pos;
    } else {
        uint8_t *end = put_varint(s->pool + p->off + p->gaps, pos - *last);
        p->gaps = (uint32_t)(end - (s->pool + p->off));
    }
    *last = pos;
}

/* The next position of a candidate that got a record. */
static inline void write_position(State *s, Candidate *c, uint32_t pos) {
    if (c->pair != NONE) append_position(s, &s->pairs[c->pair], &c->last, pos);
}

/* ------------------------------------------------------------------ tracking by scans */

/* Calls BODY for each adjacent pair of symbols in the arena: p, q positions, x, y ids, c count. */
#define FOR_EACH_ADJACENT(s, BODY)                                                          \
    do {                                                                                    \
        const Arena *ar_ = &(s)->ar;                                                        \
        uint64_t p = 0;                                                                     \
        while (p < ar_->n) {                                                                \
            int64_t c = word_count((s), p);                                                 \
            uint64_t q = next_set(ar_->starts, p);                                          \
            int32_t x = read_id(ar_, p, q - p);                                             \
            while (q < ar_->n && !bit(ar_->word_starts, q)) {                               \
                uint64_t r_ = next_set(ar_->starts, q);                                     \
                int32_t y = read_id(ar_, q, r_ - q);                                        \
                BODY                                                                        \
                p = q;                                                                      \
                q = r_;                                                                     \
                x = y;                                                                      \
            }                                                                               \
            p = q;                                                                          \
        }                                                                                   \
    } while (0)

#define SCAN_AHEAD 16 /* pairs a scan of pristine ids reads ahead of the one it counts */

/* FOR_EACH_ADJACENT, and while the arena is pristine (token ids, nothing merged: SuperBPE's stage 2
   and extend) the same pairs in the same order read straight from the int32 input word by word,
   without the bitmaps; there AHEAD_BODY runs first for the pair SCAN_AHEAD ids further on (its
   ids ax, ay; across a word's end it may be no pair: only for prefetching), so that the tables
   that BODY reads at random are fetched in time. */
#define FOR_EACH_PAIR(s, AHEAD_BODY, BODY)                                                  \
    do {                                                                                    \
        if ((s)->pristine) {                                                                \
            const int32_t *ids_ = (const int32_t *)(s)->ar.bytes;                           \
            uint64_t nsym_ = (s)->ar.n / 4, at_ = 0;                                        \
            for (int64_t w_ = 0; w_ < (s)->nwords; w_++) {                                  \
                int64_t c = (s)->wcount[w_];                                                \
                uint64_t end_ = at_ + (uint64_t)(s)->lengths[w_];                           \
                for (uint64_t k_ = at_; k_ + 1 < end_; k_++) {                              \
                    if (k_ + SCAN_AHEAD + 1 < nsym_) {                                      \
                        int32_t ax = ids_[k_ + SCAN_AHEAD], ay = ids_[k_ + SCAN_AHEAD + 1]; \
                        AHEAD_BODY                                                          \
                    }                                                                       \
                    uint64_t p = k_ * 4;                                                    \
                    int32_t x = ids_[k_], y = ids_[k_ + 1];                                 \
                    BODY                                                                    \
                }                                                                           \
                at_ = end_;                                                                 \
            }                                                                               \
        } else {                                                                            \
            FOR_EACH_ADJACENT(s, BODY);                                                     \
        }                                                                                   \
    } while (0)

/* Keep only the candidates of part `part` of `parts` (the others are counted again later). */
static int candidates_keep_part(CandidateTable *t, uint64_t part, uint64_t parts) {
    uint64_t kept = 0;
    for (uint64_t i = 0; i < t->size; i++)
        if (((mix64(t->items[i].key) >> 40) & (parts - 1)) == part) t->items[kept++] = t->items[i];
    t->size = kept;
    return candidates_rehash(t, t->cap);
}

/* A sketch of the pair counts, for scans that would find more candidates than their budget
   (SuperBPE's stage 2: millions of distinct pairs of tokens, most of them rare): every pair's
   count is added to a saturating 8-bit counter chosen by its hash (a count-min sketch of one row,
   up to half a counter per arena byte), so a pair whose counter is below the threshold is below
   it too and need not be counted. Without it such a scan is repeated for every part of the split.
   *passing: the counters at the threshold or above (a bound on the candidates, give or take
   collisions). NULL when out of memory (the scans then go without it). */
static uint8_t *count_sketch(State *s, uint64_t *mask, uint8_t least, uint64_t *passing) {
    uint64_t size = 1 << 16;
    while (size * 2 <= s->ar.n / 2) size *= 2;
    uint8_t *sketch = calloc(size, 1);
    if (!sketch) return NULL;
    *mask = size - 1;
    FOR_EACH_PAIR(s, { PREFETCH(&sketch[mix64(pair_key(ax, ay)) & (size - 1)]); }, {
        if (c > 0) {
            uint8_t *v = &sketch[mix64(pair_key(x, y)) & (size - 1)];
            *v = (uint64_t)*v + (uint64_t)c >= 255 ? 255 : (uint8_t)(*v + c);
        }
        (void)p;
    });
    uint64_t above = 0;
    for (uint64_t i = 0; i < size; i++) above += sketch[i] >= least;
    *passing = above;
    return sketch;
}

/* Track every untracked pair whose count is at least s->threshold: count them in a scan of the
   arena, give them records, then write their positions in one more scan and queue them. Where
   more than a budget of candidates turn up at once, a count sketch leaves out the pairs that
   cannot reach the threshold (count_sketch), and if there are still too many, the pairs are
   split by hash into parts, counted one part per scan (the split grows as the scan goes:
   candidates of the other half are dropped and counted in a later scan). */
static int track_byte_pairs(State *s);

static int track(State *s) {
    if (s->bytes_only) return track_byte_pairs(s);
    CandidateTable t;
    memset(&t, 0, sizeof(t));
    uint64_t budget = s->npairs > min_budget ? s->npairs : min_budget;
    uint64_t first_new = s->npairs;
    uint32_t *last = NULL;  /* per new record: the last position written */
    uint8_t *sketch = NULL;
    uint64_t sketch_mask = 0;
    int sketched = s->threshold <= 1;  /* (a sketch leaves out nothing at 1) */
    uint8_t least = s->threshold < 255 ? (uint8_t)s->threshold : 255;
    int failed = -1;
    /* token ids far more than the budget: the sketch first (their pairs are expected not to fit) */
    int sketch_first = !sketched && s->token_pairs && s->ar.n / 4 > 16 * budget;
restart:
    for (uint64_t part = 0, parts = 1; part < parts; part++) {
        candidates_clear(&t);
        FOR_EACH_PAIR(s, { if (sketch) PREFETCH(&sketch[mix64(pair_key(ax, ay)) & sketch_mask]); }, {
            uint64_t key = pair_key(x, y);
            uint64_t h = mix64(key);
            if (((h >> 40) & (parts - 1)) == part && (!sketch || sketch[h & sketch_mask] >= least) &&
                find_pair(s, x, y) == NONE) {
                uint32_t ci = candidate(&t, key);
                if (ci == NONE) goto done;
                t.items[ci].count += c;
                candidate_position(&t.items[ci], (uint32_t)p);
                if ((t.size > budget || sketch_first) && !sketched) {
                    uint64_t passing = 0;
                    sketched = 1;
                    sketch = count_sketch(s, &sketch_mask, least, &passing);
                    if (sketch) {  /* room for what it lets through (a counter may stand for several pairs) */
                        uint64_t room = passing * 2 < (sketch_mask + 1) / 16 ? passing * 2 : (sketch_mask + 1) / 16;
                        budget = room > budget ? room : budget;
                        goto restart;
                    }
                }
                while (t.size > budget && parts < MAX_PARTS) {
                    parts *= 2;
                    if (candidates_keep_part(&t, part, parts) < 0) goto done;
                }
            }
        });
        if (promote(s, &t) < 0) goto done;
    }
    if (s->npairs > first_new) {
        /* (every new record passed the sketch, when there is one: it was made before the pass that
           counted them, so a pair it stops is no new record and needs no look-up) */
        last = malloc((s->npairs - first_new) * sizeof(uint32_t));
        if (!last) goto done;
        FOR_EACH_PAIR(s, { if (sketch) PREFETCH(&sketch[mix64(pair_key(ax, ay)) & sketch_mask]); }, {
            uint32_t idx = sketch && sketch[mix64(pair_key(x, y)) & sketch_mask] < least ? NONE : find_pair(s, x, y);
            if (idx != NONE && idx >= first_new) append_position(s, &s->pairs[idx], &last[idx - first_new], (uint32_t)p);
            (void)c;
        });
    }
    for (uint64_t i = first_new; i < s->npairs; i++)
        if (push_pair(s, (uint32_t)i) < 0) goto done;
    failed = 0;
done:
    free(sketch);
    free(last);
    candidates_free(&t);
    return failed;
}

/* Calls BODY for each adjacent pair of bytes while every symbol is one byte: p position, key
   the pair as x << 8 | y, c count. */
#define FOR_EACH_BYTE_PAIR(s, BODY)                                                         \
    do {                                                                                    \
        const Arena *ar_ = &(s)->ar;                                                        \
        for (uint64_t w_ = 0, end_; w_ < ar_->n; w_ = end_) {                               \
            end_ = next_set(ar_->word_starts, w_);                                          \
            int64_t c = word_count((s), w_);                                                \
            for (uint64_t p = w_; p + 1 < end_; p++) {                                      \
                uint32_t key = (uint32_t)ar_->bytes[p] << 8 | ar_->bytes[p + 1];            \
                BODY                                                                        \
            }                                                                               \
        }                                                                                   \
    } while (0)

/* track() while every symbol is a byte (the first scan, before any merge): the 65,536 byte
   pairs index a table directly, instead of hashing every occurrence. Same candidates, in the
   same order (of first appearance), as the general scan finds, and no split into parts. */
static int track_byte_pairs(State *s) {
    CandidateTable t;
    memset(&t, 0, sizeof(t));
    uint32_t *index = malloc(65536 * sizeof(uint32_t));  /* pair -> candidate, then -> new record */
    uint32_t *last = NULL;
    uint64_t first_new = s->npairs;
    int failed = -1;
    if (!index) goto done;
    memset(index, 0xff, 65536 * sizeof(uint32_t));
    FOR_EACH_BYTE_PAIR(s, {
        uint32_t ci = index[key];
        if (ci == NONE && (ci = index[key] = candidate_append(&t, pair_key((int32_t)(key >> 8), (int32_t)(key & 0xFF)))) == NONE)
            goto done;
        t.items[ci].count += c;
        candidate_position(&t.items[ci], (uint32_t)p);
    });
    for (uint64_t i = 0; i < t.size; i++) {  /* tracked by an earlier scan: not a candidate */
        Candidate *c = &t.items[i];
        if (find_pair(s, (int32_t)(c->key >> 32), (int32_t)(uint32_t)c->key) != NONE) c->first = NONE;
    }
    if (promote(s, &t) < 0) goto done;
    if (s->npairs > first_new) {
        last = malloc((s->npairs - first_new) * sizeof(uint32_t));
        if (!last) goto done;
        for (uint64_t i = 0; i < t.size; i++) {
            const Candidate *c = &t.items[i];
            index[(c->key >> 32) << 8 | (c->key & 0xFF)] = c->pair;
        }
        FOR_EACH_BYTE_PAIR(s, {
            uint32_t idx = index[key];
            if (idx != NONE) append_position(s, &s->pairs[idx], &last[idx - first_new], (uint32_t)p);
            (void)c;
        });
    }
    for (uint64_t i = first_new; i < s->npairs; i++)
        if (push_pair(s, (uint32_t)i) < 0) goto done;
    failed = 0;
done:
    free(index);
    free(last);
    free(t.items);
    return failed;
}

/* Whether some pair that is not tracked has a positive count (only possible below the floor). */
static int untracked_positive(State *s) {
    FOR_EACH_ADJACENT(s, {
        if (c > 0 && find_pair(s, x, y) == NONE) return 1;
    });
    return 0;
}

/* ------------------------------------------------------------------------- one merge */

/* (a, b) loses the count c of an occurrence's word: one of the pairs a merge created earlier in
   its pass (it contains x), or a pair around an occurrence. Those only lose during a merge: what
   they lose is summed in a small table and taken from their records after the pass (apply_lost),
   one look-up in the large pair table per pair instead of one per occurrence. */
static inline int lose(State *s, int32_t a, int32_t b, int32_t x, int64_t c) {
    CandidateTable *t = a == x || b == x ? &s->made : &s->lost;
    uint32_t ci = candidate(t, pair_key(a, b));
    if (ci == NONE) return -1;
    t->items[ci].count -= c;
    return 0;
}

/* (a, b), a pair the merge creates, gains c at pos. The position is logged (while the log has
   room) so that the pair's positions can be written after the pass without walking the merged
   positions again. Some are undone by later steps of the pass: they stay in the pair's list as
   stale positions, which are checked when read, as those that later merges leave are. */
static inline int gain(State *s, int32_t a, int32_t b, int64_t c, uint32_t pos) {
    uint32_t ci = candidate(&s->made, pair_key(a, b));
    if (ci == NONE) return -1;
    s->made.items[ci].count += c;
    candidate_position(&s->made.items[ci], pos);
    if (s->log_len < s->log_max) {
        if (s->log_len == s->log_cap) {
            uint64_t cap = s->log_cap ? s->log_cap * 2 : 1 << 12;
            uint64_t *log = realloc(s->log, (cap < s->log_max ? cap : s->log_max) * sizeof(uint64_t));
            if (!log) return -1;
            s->log = log;
            s->log_cap = cap < s->log_max ? cap : s->log_max;
        }
        s->log[s->log_len] = (uint64_t)ci << 32 | pos;
    }
    s->log_len++;
    return 0;
}

/* What the pairs around a merge's occurrences lost, taken from their records (an untracked pair
   is ignored: it stays below the threshold). A pair that does not contain the new id only loses
   during a merge, so the sum reaches 0 exactly where the running count would have. */
static void apply_lost(State *s) {
    const CandidateTable *t = &s->lost;
    for (uint64_t k = 0; k < t->size; k++) {
        const Candidate *c = &t->items[k];
        uint32_t idx = find_pair(s, (int32_t)(c->key >> 32), (int32_t)(uint32_t)c->key);
        if (idx == NONE) continue;
        Pair *p = &s->pairs[idx];
        p->count += c->count;
        if (p->count == 0) release_positions(s, p);
    }
}

/* Write the positions of the pairs a merge created, those with records, from its merged positions
   (x starts there now): (x, right) at each, and (left, x) at the left neighbour unless that is x
   too (then it is the neighbour's (x, x)). Each pair's positions come in increasing order. */
static void created_positions(State *s, uint64_t pos, const uint8_t *gap, const uint8_t *end, int32_t x) {
    const Arena *ar = &s->ar;
    for (; pos != NONE; pos = gap < end ? pos + get_varint(&gap) : NONE) {
        if (!bit(ar->starts, pos)) continue;
        uint64_t j = next_set(ar->starts, pos);
        if (read_id(ar, pos, j - pos) != x) continue;
        if (j < ar->n && !bit(ar->word_starts, j)) {
            uint32_t ci = find_candidate(&s->made, pair_key(x, read_id(ar, j, next_set(ar->starts, j) - j)));
            write_position(s, &s->made.items[ci], (uint32_t)pos);
        }
        if (!bit(ar->word_starts, pos)) {
            uint64_t l = prev_set(ar->starts, pos);
            int32_t left = read_id(ar, l, pos - l);
            if (left == x) continue;
            uint32_t ci = find_candidate(&s->made, pair_key(left, x));
            write_position(s, &s->made.items[ci], (uint32_t)l);
        }
    }
}

/* Replace every occurrence of pair idx by x, left to right, then track the pairs it created. */
static int merge(State *s, uint32_t idx, int32_t x) {
    Arena *ar = &s->ar;
    Pair *p = &s->pairs[idx];
    int32_t a = p->a, b = p->b;
    candidates_clear(&s->made);
    candidates_clear(&s->lost);
    s->log_len = 0;
    s->bytes_only = 0;
    s->pristine = 0;
    /* The positions are read AHEAD entries ahead of the one being merged, so that the memory each
       needs (bitmaps, arena, then its word's count) is fetched while earlier ones are merged. */
    uint64_t ahead_pos[AHEAD], ahead_word[AHEAD];
    uint64_t first = p->first, pos = first, nread = 0, nword = 0, ndone = 0;
    uint64_t off = p->off, len = p->gaps;  /* the pass may release them (a == b): read them now */
    const uint8_t *gap = s->pool + off, *end = gap + len;
    for (;;) {
        for (; pos != NONE && nread < ndone + AHEAD; nread++) {
            ahead_pos[nread % AHEAD] = pos;
            PREFETCH(&ar->starts[pos >> 6]);
            PREFETCH(&ar->word_starts[pos >> 6]);
            PREFETCH(&ar->word_rank[pos >> 6]);
            PREFETCH(&ar->bytes[pos]);
            pos = gap < end ? pos + get_varint(&gap) : NONE;
        }
        for (; nword < nread && nword < ndone + AHEAD / 2; nword++) {
            uint64_t w = word_of(ar, ahead_pos[nword % AHEAD]);
            ahead_word[nword % AHEAD] = w;
            PREFETCH(&s->wcount[s->word_index ? s->word_index[w] : w]);
        }
        if (ndone == nread) break;
        uint64_t i = ahead_pos[ndone % AHEAD], w = ahead_word[ndone % AHEAD];
        ndone++;
        if (!bit(ar->starts, i)) continue;
        uint64_t j = next_set(ar->starts, i);
        if (j >= ar->n || bit(ar->word_starts, j)) continue;
        uint64_t span_a = j - i;
        if (read_id(ar, i, span_a) != a) continue;
        uint64_t k = next_set(ar->starts, j);
        uint64_t span_b = k - j;
        if (read_id(ar, j, span_b) != b) continue;
        int64_t c = s->wcount[s->word_index ? s->word_index[w] : w];
        if (!bit(ar->word_starts, i)) {
            uint64_t l = prev_set(ar->starts, i);
            int32_t left = read_id(ar, l, i - l);
            if (lose(s, left, a, x, c) < 0 || gain(s, left, x, c, (uint32_t)l) < 0) return -1;
        }
        if (k < ar->n && !bit(ar->word_starts, k)) {
            int32_t right = read_id(ar, k, next_set(ar->starts, k) - k);
            if (lose(s, b, right, x, c) < 0 || gain(s, x, right, c, (uint32_t)i) < 0) return -1;
        }
        s->pairs[idx].count -= c;
        if (overflows(ar, i, span_a)) ovf_del(ar, (uint32_t)i);
        if (overflows(ar, j, span_b)) ovf_del(ar, (uint32_t)j);
        ar->starts[j >> 6] &= ~(1ULL << (j & 63));
        if (write_id(ar, i, k - i, x) < 0) return -1;
    }
    /* The created pairs that reach the threshold get records, in the order they were made, with
       their positions: those of the log, or where the log overflowed, where they are now, found
       by walking the merged positions again (the list is garbage now, but the pool is not
       compacted before the end of the merge). Room for them is what the pass gave them, a
       bound; what is left of it is garbage. */
    release_positions(s, &s->pairs[idx]);
    apply_lost(s);
    uint64_t first_new = s->npairs;
    if (promote(s, &s->made) < 0) return -1;  /* the pool may move */
    if (s->log_len <= s->log_max) {
        for (uint64_t k = 0; k < s->log_len; k++)
            write_position(s, &s->made.items[s->log[k] >> 32], (uint32_t)s->log[k]);
    } else {
        created_positions(s, first, s->pool + off, s->pool + off + len, x);
    }
    for (uint64_t k = 0; k < s->made.size; k++) {
        const Candidate *c = &s->made.items[k];
        if (c->pair != NONE) s->garbage += c->gaps - s->pairs[c->pair].gaps;
    }
    for (uint64_t i = first_new; i < s->npairs; i++)
        if (push_pair(s, (uint32_t)i) < 0) return -1;
    if (s->garbage > compact_bytes && s->garbage * 4 > s->pool_len) pool_compact(s);
    return 0;
}

/* --------------------------------------------------------------------------- set up */

static void free_state(State *s) {
    free(s->ar.starts); free(s->ar.word_starts); free(s->ar.word_rank);
    free(s->ar.ovf_keys); free(s->ar.ovf_vals);
    free(s->word_index);
    free(s->pairs); free(s->slots); free(s->heap); free(s->pool);
    candidates_free(&s->made);
    candidates_free(&s->lost);
    free(s->log);
}

/* The bitmaps of the input words: symbols of unit bytes each, words of lengths[w] symbols. */
static int build_arena(State *s, const int32_t *lengths, int64_t nwords, uint64_t unit) {
    Arena *ar = &s->ar;
    uint64_t words64 = (ar->n >> 6) + 2;
    ar->starts = calloc(words64, sizeof(uint64_t));
    ar->word_starts = calloc(words64, sizeof(uint64_t));
    ar->word_rank = malloc(words64 * sizeof(uint32_t));
    if (!ar->starts || !ar->word_starts || !ar->word_rank) return -1;
    uint64_t p = 0, empty = 0;
    for (int64_t w = 0; w < nwords; w++) {
        if (lengths[w] == 0) { empty++; continue; }
        ar->word_starts[p >> 6] |= 1ULL << (p & 63);
        for (int64_t k = 0; k < lengths[w]; k++, p += unit) ar->starts[p >> 6] |= 1ULL << (p & 63);
    }
    ar->starts[ar->n >> 6] |= 1ULL << (ar->n & 63);
    ar->word_starts[ar->n >> 6] |= 1ULL << (ar->n & 63);
    uint32_t r = 0;
    for (uint64_t k = 0; k < words64; k++) {
        ar->word_rank[k] = r;
        r += (uint32_t)popcount64(ar->word_starts[k]);
    }
    if (empty) {
        s->word_index = malloc((size_t)(nwords - (int64_t)empty) * sizeof(uint32_t) + 1);
        if (!s->word_index) return -1;
        uint64_t k = 0;
        for (int64_t w = 0; w < nwords; w++)
            if (lengths[w]) s->word_index[k++] = (uint32_t)w;
    }
    return 0;
}

PyDoc_STRVAR(train_doc,
"train(symbols, lengths, counts, num_merges, first_id, taken, by_occurrence, min_frequency, on_merge,\n"
"      allow_pair=None, ranks=None, consume=False, as_arrays=False)\n"
"-> (merges, stop)\n\n"
"symbols: buffer of uint8 or int32 token ids (non-negative), all words end to end; lengths: int32\n"
"per word; counts: int64 per word; taken: set of ids new merges must skip; on_merge(a, b, new_id,\n"
"count) or None; allow_pair(a, b) -> bool, or None, vetoes a pair for good; ranks: None, or an\n"
"int32 permutation of range(len(ranks)) that selects BpeTrainer's rules (ids compare by\n"
"ranks[id]); consume: symbols is a writable buffer the caller no longer needs, used in place\n"
"(no copy). merges is a list of (a, b, new_id, count), or with as_arrays two bytes objects: int32\n"
"a, b, new_id per merge and int64 counts; stop is 0 (done), 1 (out of pairs) or 2 (no pair\n"
"reaches min_frequency).");

static PyObject *train(PyObject *self, PyObject *args) {
    PyObject *symobj, *taken, *on_merge, *allow_pair = Py_None, *ranks = Py_None;
    Py_buffer symbuf = {0}, lenbuf = {0}, cntbuf = {0}, rankbuf = {0};
    Py_ssize_t num_merges;
    long long first_id, min_frequency;
    int by_occurrence, consume = 0, as_arrays = 0;
    if (!PyArg_ParseTuple(args, "Oy*y*nLOpLO|OOpp", &symobj, &lenbuf, &cntbuf, &num_merges, &first_id, &taken,
                          &by_occurrence, &min_frequency, &on_merge, &allow_pair, &ranks, &consume, &as_arrays))
        return NULL;
    PyObject *result = NULL, *merges = NULL;
    uint8_t *seen = NULL, *copy = NULL;
    int32_t *learned_ids = NULL;  /* a, b, new id per merge */
    int64_t *learned_counts = NULL;
    Py_ssize_t nlearned = 0, cap_learned = 0;
    int stop = 0, finished = 0;
    State s;
    memset(&s, 0, sizeof(s));
    s.by_occurrence = by_occurrence;
    if (PyObject_GetBuffer(symobj, &symbuf, consume ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) goto done;

    Py_ssize_t itemsize = symbuf.itemsize;
    if ((itemsize != 1 && itemsize != 4) || lenbuf.itemsize != 4 || cntbuf.itemsize != 8 ||
        lenbuf.len / 4 != cntbuf.len / 8) {
        PyErr_SetString(PyExc_ValueError, "symbols must be uint8 or int32, lengths int32, counts int64, one per word");
        goto done;
    }
    if ((uint64_t)symbuf.len > MAX_ARENA) {
        PyErr_SetString(PyExc_OverflowError, "too many symbols for one training run (4 GB of them)");
        goto done;
    }
    if (ranks != Py_None) {
        if (PyObject_GetBuffer(ranks, &rankbuf, PyBUF_SIMPLE) < 0) goto done;
        if (rankbuf.itemsize != 4) {
            PyErr_SetString(PyExc_ValueError, "ranks must be int32");
            goto done;
        }
        s.nranks = rankbuf.len / 4;
        s.ranks = rankbuf.buf;
        if (by_occurrence) {
            PyErr_SetString(PyExc_ValueError, "ranks (BpeTrainer's rules) and by_occurrence exclude each other");
            goto done;
        }
        seen = calloc(s.nranks + 1, 1);
        if (!seen) { PyErr_NoMemory(); goto done; }
        for (int64_t i = 0; i < s.nranks; i++) {
            int32_t r = s.ranks[i];
            if (r < 0 || r >= s.nranks || seen[r]) {
                PyErr_SetString(PyExc_ValueError, "ranks must be a permutation of range(len(ranks))");
                goto done;
            }
            seen[r] = 1;
        }
    }
    int64_t nwords = lenbuf.len / 4, nsym = symbuf.len / itemsize, total = 0;
    const int32_t *lengths = lenbuf.buf;
    int bad_lengths = 0;
    for (int64_t w = 0; w < nwords && !bad_lengths; w++)
        bad_lengths = lengths[w] < 0 || (total += lengths[w]) > nsym;
    if (bad_lengths || total != nsym) {
        PyErr_SetString(PyExc_ValueError, "word lengths do not add up to the number of symbols");
        goto done;
    }
    if (itemsize == 4) {
        const int32_t *ids = symbuf.buf;
        for (int64_t i = 0; i < nsym; i++)
            if (ids[i] < 0) { PyErr_SetString(PyExc_ValueError, "token ids must be non-negative"); goto done; }
    }
    s.wcount = cntbuf.buf;
    s.ar.n = (uint64_t)symbuf.len;
    if (consume) {
        s.ar.bytes = symbuf.buf;
    } else {
        copy = malloc(s.ar.n + 1);
        if (!copy) { PyErr_NoMemory(); goto done; }
        memcpy(copy, symbuf.buf, s.ar.n);
        s.ar.bytes = copy;
    }
    if (build_arena(&s, lengths, nwords, (uint64_t)itemsize) < 0) { PyErr_NoMemory(); goto done; }
    s.bytes_only = itemsize == 1;
    s.log_max = min_log && s.ar.n / 16 > min_log ? s.ar.n / 16 : min_log;
    s.token_pairs = itemsize == 4;
    s.pristine = s.token_pairs;
    s.lengths = lengths;
    s.nwords = nwords;
    /* Pairs below min_frequency are never merged, so they need never be tracked: s.floor. Under
       BpeTrainer's rules they are tracked down to 1 in the end: there an out-of-date entry can
       stand for a larger count than its own (a count that wrapped past 2**31), and the order in
       which entries come up decides what is merged, or where the loop stops. */
    int64_t least = min_frequency > 1 ? min_frequency : 1;
    if (s.ranks && least > INT32_MAX) least = INT32_MAX;  /* untracked counts must not wrap */
    s.floor = s.ranks ? 1 : least;
    s.threshold = least > first_threshold ? least : first_threshold;
    if (s.ranks) {
        /* Past 2**32 a pair's i32 view can fall to 0 while its count is not 0 (BpeTrainer keeps that
           entry at 0, and the first entry at 0 that is current stops its loop): then every pair has
           to be tracked from its start, as BpeTrainer queues every pair. No pair counts more than
           the sum of count x (length - 1) over the words, so below 2**32 nothing changes. */
        uint64_t bound = 0;
        for (Py_ssize_t w = 0; w < nwords && bound < ((uint64_t)1 << 32); w++)
            if (lengths[w] > 1 && s.wcount[w] > 0)
                bound += (uint64_t)s.wcount[w] >= ((uint64_t)1 << 32) ? ((uint64_t)1 << 32)
                                                                     : (uint64_t)s.wcount[w] * (uint64_t)(lengths[w] - 1);
        if (bound >= ((uint64_t)1 << 32)) s.threshold = least;
    }
    if (track(&s) < 0) { PyErr_NoMemory(); goto done; }

    int64_t next_id = first_id;
    for (Py_ssize_t m = 0; m < num_merges;) {
        if (s.heap_len == 0) {
            if (s.threshold > s.floor) {
                s.threshold = s.threshold / 4 > s.floor ? s.threshold / 4 : s.floor;
                if (track(&s) < 0) { PyErr_NoMemory(); goto done; }
                continue;
            }
            stop = s.floor > 1 && untracked_positive(&s) ? 2 : 1;  /* a pair below the floor is left */
            break;
        }
        HeapItem top = heap_pop(&s);
        Pair *p = &s.pairs[top.pair];
        /* vetoed, or no occurrence left (BpeTrainer's rules requeue that with count 0) */
        if (s.ranks ? p->count < 0 : p->count <= 0) continue;
        if (top.count < s.threshold && s.threshold > s.floor) {
            /* an untracked pair (its count is below the threshold) may come first: track them */
            if (heap_push(&s, top) < 0) { PyErr_NoMemory(); goto done; }
            s.threshold = s.threshold / 4 > s.floor ? s.threshold / 4 : s.floor;
            if (track(&s) < 0) { PyErr_NoMemory(); goto done; }
            continue;
        }
        uint32_t key = tie_key(&s, p);
        int64_t current = heap_count(&s, p->count);
        if (current != top.count || key != top.key) {
            HeapItem item = {current, key, top.pair};
            if (heap_push(&s, item) < 0) { PyErr_NoMemory(); goto done; }
            continue;
        }
        if (s.ranks && current == 0) { stop = 1; break; }  /* BpeTrainer stops at a current count of 0 */
        /* under BpeTrainer's rules a negative i32 count is a huge u64, above any min_frequency */
        if (s.ranks ? current <= INT32_MAX && current < min_frequency : current < min_frequency) { stop = 2; break; }
        if (allow_pair != Py_None) {
            PyObject *ok = PyObject_CallFunction(allow_pair, "ii", p->a, p->b);
            if (!ok) goto done;
            int allowed = PyObject_IsTrue(ok);
            Py_DECREF(ok);
            if (allowed < 0) goto done;
            if (!allowed) {  /* never merge this pair: drop it and its occurrences for good */
                p = &s.pairs[top.pair];
                p->count = VETOED;
                release_positions(&s, p);
                continue;
            }
        }
        for (;;) {
            PyObject *id = PyLong_FromLongLong(next_id);
            if (!id) goto done;
            int hit = taken == Py_None ? 0 : PySet_Contains(taken, id);
            Py_DECREF(id);
            if (hit < 0) goto done;
            if (!hit) break;
            next_id++;
        }
        if (next_id > INT32_MAX) { PyErr_SetString(PyExc_OverflowError, "token ids past 2**31"); goto done; }
        int32_t x = (int32_t)next_id++;
        p = &s.pairs[top.pair];
        int32_t a = p->a, b = p->b;
        int64_t count = p->count;
        if (merge(&s, top.pair, x) < 0) { PyErr_NoMemory(); goto done; }
        if (m == cap_learned) {
            cap_learned = cap_learned ? cap_learned * 2 : 1024;
            int32_t *ids = realloc(learned_ids, (size_t)cap_learned * 3 * sizeof(int32_t));
            if (ids) learned_ids = ids;
            int64_t *counts = realloc(learned_counts, (size_t)cap_learned * sizeof(int64_t));
            if (counts) learned_counts = counts;
            if (!ids || !counts) { PyErr_NoMemory(); goto done; }
        }
        learned_ids[3 * m] = a;
        learned_ids[3 * m + 1] = b;
        learned_ids[3 * m + 2] = x;
        learned_counts[m] = count;
        nlearned = ++m;
        if (on_merge != Py_None) {
            PyObject *r = PyObject_CallFunction(on_merge, "iiiL", a, b, x, count);
            if (!r) goto done;
            Py_DECREF(r);
        }
        if ((m & 1023) == 0 && PyErr_CheckSignals() < 0) goto done;
    }
    finished = 1;
done:
    free(seen);
    free(copy);
    free_state(&s);  /* before the result is built: its objects need not share the peak */
    if (finished) {
        if (as_arrays) {
            merges = Py_BuildValue("(y#y#)", nlearned ? (const char *)learned_ids : "",
                                   (Py_ssize_t)(nlearned * 3 * sizeof(int32_t)),
                                   nlearned ? (const char *)learned_counts : "", (Py_ssize_t)(nlearned * sizeof(int64_t)));
        } else if ((merges = PyList_New((Py_ssize_t)nlearned))) {
            for (Py_ssize_t m = 0; m < nlearned; m++) {
                PyObject *entry = Py_BuildValue("(iiiL)", learned_ids[3 * m], learned_ids[3 * m + 1],
                                                learned_ids[3 * m + 2], (long long)learned_counts[m]);
                if (!entry) { Py_CLEAR(merges); break; }
                PyList_SET_ITEM(merges, m, entry);
            }
        }
        if (merges) result = Py_BuildValue("(Oi)", merges, stop);
    }
    free(learned_ids);
    free(learned_counts);
    if (rankbuf.obj) PyBuffer_Release(&rankbuf);
    Py_XDECREF(merges);
    if (symbuf.obj) PyBuffer_Release(&symbuf);
    PyBuffer_Release(&lenbuf);
    PyBuffer_Release(&cntbuf);
    return result;
}

/* ------------------------------------------------------------- fewer words for the loop */

/* reduce_words (see its doc): which pairs can never be merged across, and the words cut there.
   A token that a merge makes spans whole input symbols, and its first and last input symbols are
   always the same (a token is always made by the same merge), so every occurrence of a pair of
   tokens sits on a boundary of input symbols x | y of one kind, and the pair's count is at most
   the count of x | y in the input. Merge counts never rise (a pair a merge makes counts no more
   than the merge), so while the loop merges pairs of count `least` or more it never merges
   across a boundary whose input pair counts less: the words can be cut there, one-symbol parts
   dropped (they hold no pair) and equal parts counted as one, and the loop, which picks by count
   and then by ids ("smallest_pair"), picks the same pairs on them. Whether it did (every merge
   made, the last counting `least` or more) is the caller's to check. The input pairs are counted
   in a count-min sketch of one row of 16-bit saturating counters (a counter is at least the count
   of every pair on it, so a pair cut is one that counts less than least), read ahead of use. */

#define REDUCE_AHEAD 16 /* pairs read ahead of the one counted or looked up */

/* The sketch's counters: a power of 2 from 65,536 up to the input's symbols. */
static uint64_t reduce_sketch_size(int64_t nsym) {
    uint64_t size = 1 << 16;
    while (size * 2 <= (uint64_t)nsym) size *= 2;
    return size;
}

typedef struct {
    int32_t *ids;       /* the distinct parts end to end, in order of first appearance */
    int32_t *lengths;
    int64_t *counts;
    uint64_t *hashes;
    uint64_t *starts;   /* of each part in ids */
    uint64_t nids, nparts;
    uint32_t *slots;    /* part index; NONE: empty */
    uint64_t cap;
} Parts;

static uint64_t part_hash_at(const void *hashes, uint64_t i) { return ((const uint64_t *)hashes)[i]; }

static int parts_rehash(Parts *t, uint64_t cap) {
    return index_items(&t->slots, &t->cap, cap, t->nparts, part_hash_at, t->hashes);
}

/* Count the part ids[0:n] (n >= 2) c more times, added at the end if new; -1 when out of memory. */
static int parts_add(Parts *t, const int32_t *ids, int64_t n, int64_t c) {
    if ((t->nparts + 1) * 2 > t->cap && parts_rehash(t, t->cap ? t->cap * 2 : 1 << 12) < 0) return -1;
    uint64_t h = hash_bytes((const uint8_t *)ids, (size_t)n * sizeof(int32_t)), mask = t->cap - 1, j = h & mask;
    for (; t->slots[j] != NONE; j = (j + 1) & mask) {
        uint32_t k = t->slots[j];
        if (t->hashes[k] == h && t->lengths[k] == n && !memcmp(t->ids + t->starts[k], ids, (size_t)n * sizeof(int32_t))) {
            t->counts[k] += c;
            return 0;
        }
    }
    if (t->nparts + 1 >= NONE) return -1;
    uint64_t k = t->nparts++;
    t->slots[j] = (uint32_t)k;
    t->hashes[k] = h;
    t->lengths[k] = (int32_t)n;
    t->counts[k] = c;
    t->starts[k] = t->nids;
    memcpy(t->ids + t->nids, ids, (size_t)n * sizeof(int32_t));
    t->nids += (uint64_t)n;
    return 0;
}

PyDoc_STRVAR(reduce_words_doc,
"reduce_words(symbols, lengths, counts, num_merges) -> (symbols, lengths, counts, least) or None\n\n"
"Fewer words of int32 token ids for a merge loop that picks by count, then by ids (tie_break\n"
"'smallest_pair'): least is half the num_merges-th largest counter of a sketch of the input's\n"
"pair counts, and the words are cut between two symbols whose counter is below least, parts of one symbol\n"
"dropped and equal parts counted once, in order of first appearance (bytearrays: int32 ids,\n"
"int32 lengths, int64 counts). While the loop merges pairs of count least or more it merges the\n"
"same pairs on these as on the input; the caller checks that it did (every merge made, the last\n"
"counting least or more). None when least would be below 2 (nothing to cut).");

static PyObject *reduce_words(PyObject *self, PyObject *args) {
    Py_buffer symbuf, lenbuf, cntbuf;
    Py_ssize_t num_merges;
    if (!PyArg_ParseTuple(args, "y*y*y*n", &symbuf, &lenbuf, &cntbuf, &num_merges)) return NULL;
    PyObject *result = NULL;
    Parts parts;
    memset(&parts, 0, sizeof(parts));
    uint64_t *hist = NULL;
    uint16_t *sketch = NULL;
    int64_t nwords = lenbuf.len / 4, nsym = symbuf.len / 4, total = 0, least = 0;
    const int32_t *ids = symbuf.buf, *lengths = lenbuf.buf;
    const int64_t *wcount = cntbuf.buf;
    int bad = symbuf.len % 4 || lenbuf.len % 4 || cntbuf.len != nwords * 8;
    for (int64_t w = 0; w < nwords && !bad; w++) bad = lengths[w] < 0 || (total += lengths[w]) > nsym || wcount[w] < 0;
    for (int64_t i = 0; i < nsym && !bad; i++) bad = ids[i] < 0;
    if (bad || total != nsym) {
        PyErr_SetString(PyExc_ValueError, "reduce_words: int32 ids (non-negative), int32 lengths adding up to them, "
                        "int64 counts (non-negative), one per word");
        goto done;
    }
    uint64_t size = reduce_sketch_size(nsym), mask = size - 1;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    sketch = calloc(size, sizeof(uint16_t));
    hist = calloc(65536, sizeof(uint64_t));
    failed = !sketch || !hist;
    for (int64_t w = 0, at = 0; w < nwords && !failed; at += lengths[w++]) {
        uint64_t c = (uint64_t)wcount[w];
        for (int64_t k = at; k + 1 < at + lengths[w]; k++) {
            if (k + REDUCE_AHEAD + 1 < nsym) PREFETCH(&sketch[mix64(pair_key(ids[k + REDUCE_AHEAD], ids[k + REDUCE_AHEAD + 1])) & mask]);
            uint16_t *v = &sketch[mix64(pair_key(ids[k], ids[k + 1])) & mask];
            *v = *v + c >= 65535 ? 65535 : (uint16_t)(*v + c);
        }
    }
    if (!failed) {
        for (uint64_t i = 0; i < size; i++) hist[sketch[i]]++;
        uint64_t above = 0;
        int64_t v = 65535;
        for (; v >= 1; v--) {
            above += hist[v];
            if (above >= (uint64_t)num_merges) break;
        }
        least = num_merges > 0 ? v / 2 : 0;
    }
    if (!failed && least >= 2) {
        parts.ids = malloc((size_t)nsym * sizeof(int32_t) + 1);
        parts.lengths = malloc((size_t)(nsym / 2 + 1) * sizeof(int32_t));
        parts.counts = malloc((size_t)(nsym / 2 + 1) * sizeof(int64_t));
        parts.hashes = malloc((size_t)(nsym / 2 + 1) * sizeof(uint64_t));
        parts.starts = malloc((size_t)(nsym / 2 + 1) * sizeof(uint64_t));
        failed = !parts.ids || !parts.lengths || !parts.counts || !parts.hashes || !parts.starts;
        for (int64_t w = 0, at = 0; w < nwords && !failed; at += lengths[w++]) {
            int64_t end = at + lengths[w], from = at;
            for (int64_t k = at; k < end; k++) {
                if (k + REDUCE_AHEAD + 1 < nsym) PREFETCH(&sketch[mix64(pair_key(ids[k + REDUCE_AHEAD], ids[k + REDUCE_AHEAD + 1])) & mask]);
                if (k + 1 < end && sketch[mix64(pair_key(ids[k], ids[k + 1])) & mask] >= least) continue;
                if (k + 1 - from >= 2 && parts_add(&parts, ids + from, k + 1 - from, wcount[w]) < 0) { failed = 1; break; }
                from = k + 1;
            }
        }
    }
    Py_END_ALLOW_THREADS
    if (failed) { PyErr_NoMemory(); goto done; }
    if (least < 2) { result = Py_NewRef(Py_None); goto done; }
    result = Py_BuildValue("(NNNL)",
        PyByteArray_FromStringAndSize((const char *)parts.ids, (Py_ssize_t)(parts.nids * sizeof(int32_t))),
        PyByteArray_FromStringAndSize((const char *)parts.lengths, (Py_ssize_t)(parts.nparts * sizeof(int32_t))),
        PyByteArray_FromStringAndSize((const char *)parts.counts, (Py_ssize_t)(parts.nparts * sizeof(int64_t))),
        (long long)least);
done:
    free(sketch); free(hist);
    free(parts.ids); free(parts.lengths); free(parts.counts); free(parts.hashes); free(parts.starts); free(parts.slots);
    PyBuffer_Release(&symbuf);
    PyBuffer_Release(&lenbuf);
    PyBuffer_Release(&cntbuf);
    return result;
}

PyDoc_STRVAR(tune_doc,
"_tune(first_threshold, min_budget, compact_bytes, min_log) -> the previous four\n\n"
"For tests: sizes that decide how much memory training uses, never which merges it learns\n"
"(min_log 0: every merge walks its positions again, as one that outgrows its log does).");

static PyObject *tune(PyObject *self, PyObject *args) {
    long long threshold, budget, compact, log;
    if (!PyArg_ParseTuple(args, "LLLL", &threshold, &budget, &compact, &log)) return NULL;
    if (threshold < 1 || budget < 1 || compact < 0 || log < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "first_threshold and min_budget must be positive, compact_bytes and min_log not negative");
        return NULL;
    }
    PyObject *previous = Py_BuildValue("(LKKK)", (long long)first_threshold, (unsigned long long)min_budget,
                                       (unsigned long long)compact_bytes, (unsigned long long)min_log);
    first_threshold = threshold;
    min_budget = (uint64_t)budget;
    compact_bytes = (uint64_t)compact;
    min_log = (uint64_t)log;
    return previous;
}

static PyMethodDef methods[] = {
    {"train", train, METH_VARARGS, train_doc},
    {"_tune", tune, METH_VARARGS, tune_doc},
    {"reduce_words", reduce_words, METH_VARARGS, reduce_words_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_merge_loop", "The BPE merge loop in C (see hf_bbpe/trainer.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__merge_loop(void) { return PyModule_Create(&module); }
