/*
 * The merge loop's pairs (included by loop.c only): the records of tracked pairs and their
 * positions, the index over them, the heap, and the candidate tables of untracked pairs.
 */
#ifndef HF_BBPE_MERGE_PAIRS_H
#define HF_BBPE_MERGE_PAIRS_H

#include "common/hash.h"
#include "merge/arena.h"

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

#endif
