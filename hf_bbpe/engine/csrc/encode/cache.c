/*
 * The kernel's memory for its tables (huge pages where the system has them) and its piece caches:
 * made, grown, emptied, filled, and taken by a call or a thread from the kernel's pool.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "encode/encode.h"
#include "encode/lookup.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif

/* The tables probed at random once per chunk (front cache, seed table, piece cache, vocabulary),
 * zeroed and aligned to a cache line. Large ones are asked for in huge pages where the system
 * has them: a random probe into megabytes of 4 KB pages misses the TLB most of the time. */
#define HUGE_PAGE ((size_t)1 << 21)

void *table_alloc(size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE) && defined(MAP_ANONYMOUS)
    if (size >= HUGE_PAGE) {
        size_t len = (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        uint8_t *p = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return NULL;
        uint8_t *at = (uint8_t *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
        if (at > p) munmap(p, (size_t)(at - p));
        if (at + len < p + len + HUGE_PAGE) munmap(at + len, (size_t)(p + len + HUGE_PAGE - (at + len)));
        madvise(at, len, MADV_HUGEPAGE);
        return at;
    }
#endif
    void *p = NULL;
    if (posix_memalign(&p, 64, size ? size : 1) != 0) return NULL;
    memset(p, 0, size);
    return p;
}

void table_free(void *p, size_t size) {
    if (!p) return;
#if defined(__linux__) && defined(MADV_HUGEPAGE) && defined(MAP_ANONYMOUS)
    if (size >= HUGE_PAGE) {
        munmap(p, (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1));
        return;
    }
#endif
    (void)size;
    free(p);
}

/* Ask for huge pages for the whole 2 MB pages inside a large buffer whose pages are not touched
 * yet (a fresh allocation of megabytes is mapped anew by malloc, then zeroed a page at a time at
 * first touch: a large list's items, a call's ids): one fault per 2 MB instead of one per 4 KB,
 * which in a virtual machine costs about as much as writing the list (a 16 MB text's list of
 * ints: 86 -> 71 ms). A hint only: the system may give small pages. */
void huge_pages_advise(void *p, size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size < 2 * HUGE_PAGE) return;
    uintptr_t from = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
    uintptr_t to = ((uintptr_t)p + size) & ~(uintptr_t)(HUGE_PAGE - 1);
    if (to > from) madvise((void *)from, to - from, MADV_HUGEPAGE);
#else
    (void)p;
    (void)size;
#endif
}

static size_t front_size(int bits) { return ((size_t)1 << bits) * sizeof(FrontSlot); }

/* A piece cache whose table has slots slots (a power of two, at least PCACHE_MIN_SLOTS). */
static PieceCache *pcache_new(Py_ssize_t max_entries, uint64_t slots, int front_bits) {
    PieceCache *c = calloc(1, sizeof(PieceCache));
    if (c) c->front_bits = front_bits;
    if (c) c->max_entries = (uint32_t)(max_entries < 1 ? 1 : max_entries < (Py_ssize_t)PCACHE_MAX_ENTRIES ? max_entries : (Py_ssize_t)PCACHE_MAX_ENTRIES);
    if (c) c->slot_mask = slots - 1;
    if (c && (!(c->slots = table_alloc(slots * sizeof(PieceSlot))) ||
              !(c->front = table_alloc(front_size(front_bits))))) {
        table_free(c->slots, slots * sizeof(PieceSlot));
        free(c);
        return NULL;
    }
    return c;
}

void pcache_free(PieceCache *c) {
    if (c) {
        table_free(c->front, front_size(c->front_bits));
        table_free(c->slots, (c->slot_mask + 1) * sizeof(PieceSlot));
        table_free(c->arena, c->arena_cap);
        free(c);
    }
}


/* The table twice as large, with the same entries (a slot's probe starts at mix64 of its hash,
 * see encode_range); 0, or -1 when it stays as it is (at its largest, or out of memory). */
static int pcache_grow(PieceCache *c) {
    uint64_t slots = (c->slot_mask + 1) * 2;
    PieceSlot *table = slots <= PCACHE_MAX_SLOTS ? table_alloc(slots * sizeof(PieceSlot)) : NULL;
    if (!table) return -1;
    for (uint64_t j = 0; j <= c->slot_mask; j++) {
        if (!c->slots[j].len) continue;
        uint64_t k = (mix64(c->slots[j].hash) >> 20) & (slots - 1);
        while (table[k].len) k = (k + 1) & (slots - 1);
        table[k] = c->slots[j];
    }
    table_free(c->slots, (c->slot_mask + 1) * sizeof(PieceSlot));
    c->slots = table;
    c->slot_mask = slots - 1;
    return 0;
}

/* Empty the cache and its front cache (whose slots may hold offsets into the arena). */
void pcache_reset(PieceCache *c) {
    memset(c->slots, 0, (c->slot_mask + 1) * sizeof(PieceSlot));
    memset(c->front, 0, front_size(c->front_bits));
    c->arena_len = 0;
    c->entries = c->refused = 0;
    c->reset_due = 0;
}

/* Keep ids[0:m] as the piece data[0:n] in the empty slot s (the table grows first when half
 * full). The offset of the ids in the arena, or -1 when they were not kept: when full, as after
 * max_entries such refusals the cache is emptied (pcache_reset, between two blocks of chunks,
 * when no chunk holds an offset into the arena). */
int64_t pcache_put(PieceCache *c, PieceSlot *s, uint64_t h, uint64_t m_hash, const uint8_t *data, Py_ssize_t n,
                   const int32_t *ids, Py_ssize_t m) {
    size_t need = (size_t)m * sizeof(int32_t) + (((size_t)n + 3) & ~(size_t)3);
    int full = c->entries >= c->max_entries || c->arena_len + need > PCACHE_ARENA_MAX;
    if (!full && (uint64_t)c->entries * 2 >= c->slot_mask) { /* half full: grow, or it is full */
        if (pcache_grow(c) == 0) s = (PieceSlot *)pcache_find(c, h, m_hash, data, n);
        else full = 1;
    }
    if (full) {
        if (++c->refused >= c->max_entries) c->reset_due = 1;
        return -1;
    }
    if (c->arena_len + need > c->arena_cap) {
        size_t cap = grown_capacity(c->arena_cap, c->arena_len + need, (size_t)1 << 16);
        uint8_t *arena = table_alloc(cap); /* (in huge pages when large: front hits read it at random) */
        if (!arena) return -1; /* not kept: the cache is only an accelerator */
        if (c->arena_len) memcpy(arena, c->arena, c->arena_len);
        table_free(c->arena, c->arena_cap);
        c->arena = arena;
        c->arena_cap = cap;
    }
    uint8_t *at = c->arena + c->arena_len;
    memcpy(at, ids, (size_t)m * sizeof(int32_t));
    memcpy(at + (size_t)m * sizeof(int32_t), data, (size_t)n);
    s->hash = h;
    s->off = (uint32_t)c->arena_len;
    s->len = (uint16_t)n;
    s->nids = (uint16_t)m;
    c->arena_len += need;
    c->entries++;
    return s->off;
}

#if defined(__GNUC__) || defined(__clang__)
/* A free piece cache of the kernel, marked busy, or NULL (all busy, or out of memory): slot first
 * if free, so that the same part of a call's work finds the cache it warmed. No GIL needed. */
PieceCache *pcache_take_from(ChunkBPE *self, int first, int *slot) {
    for (int i = 0; i < PCACHE_POOL; i++) {
        int k = (first + i) % PCACHE_POOL;
        if (__atomic_exchange_n(&self->pcache_busy[k], 1, __ATOMIC_ACQUIRE) == 0) {
            if (!self->pcache[k]) self->pcache[k] = pcache_new(self->cache_max, PCACHE_MIN_SLOTS, FRONT_MIN_BITS);
            if (self->pcache[k]) { *slot = k; return self->pcache[k]; }
            __atomic_store_n(&self->pcache_busy[k], 0, __ATOMIC_RELEASE);
            return NULL;
        }
    }
    return NULL;
}

void pcache_give(ChunkBPE *self, int slot) {
    if (slot >= 0) __atomic_store_n(&self->pcache_busy[slot], 0, __ATOMIC_RELEASE);
}
#else
PieceCache *pcache_take_from(ChunkBPE *self, int first, int *slot) { (void)self; (void)first; (void)slot; return NULL; }
void pcache_give(ChunkBPE *self, int slot) { (void)self; (void)slot; }
#endif

PieceCache *pcache_take(ChunkBPE *self, int *slot) { return pcache_take_from(self, 0, slot); }

/* A copy of cache (NULL when out of memory): a thread's first cache starts as warm as the first
 * thread's instead of empty. */
static PieceCache *pcache_clone(const PieceCache *c) {
    PieceCache *copy = pcache_new(c->max_entries, c->slot_mask + 1, c->front_bits);
    if (!copy) return NULL;
    memcpy(copy->front, c->front, front_size(c->front_bits));
    memcpy(copy->slots, c->slots, (c->slot_mask + 1) * sizeof(PieceSlot));
    if (c->arena_len && (copy->arena = table_alloc(c->arena_cap))) {
        memcpy(copy->arena, c->arena, c->arena_len);
        copy->arena_len = c->arena_len;
        copy->arena_cap = c->arena_cap;
        copy->entries = c->entries;
        copy->refused = c->refused;
    } else if (c->arena_len) {
        memset(copy->slots, 0, (copy->slot_mask + 1) * sizeof(PieceSlot)); /* no arena: no entry */
        memset(copy->front, 0, front_size(copy->front_bits));
    }
    return copy;
}

/* Before num_threads threads take the caches of slots 0 .. num_threads - 1: those never made yet
 * start as copies of slot 0's, when it exists and is free. No GIL needed. */
void pcache_warm_slots(ChunkBPE *self, int num_threads) {
#if defined(__GNUC__) || defined(__clang__)
    if (num_threads > PCACHE_POOL) num_threads = PCACHE_POOL;
    if (__atomic_exchange_n(&self->pcache_busy[0], 1, __ATOMIC_ACQUIRE)) return;
    for (int k = 1; k < num_threads && self->pcache[0]; k++) {
        if (__atomic_exchange_n(&self->pcache_busy[k], 1, __ATOMIC_ACQUIRE)) continue;
        if (!self->pcache[k]) self->pcache[k] = pcache_clone(self->pcache[0]);
        __atomic_store_n(&self->pcache_busy[k], 0, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&self->pcache_busy[0], 0, __ATOMIC_RELEASE);
#else
    (void)self; (void)num_threads;
#endif
}


/* After FRONT_REVIEW_PROBES probes of the front cache: one that missed more than one in
 * FRONT_GROW_MISS_SHARE of them doubles (up to FRONT_MAX_BITS), emptied; it stays as it is when
 * there is no memory for it. */
void front_review(PieceCache *c) {
    if (c->front_bits < FRONT_MAX_BITS && c->front_misses * FRONT_GROW_MISS_SHARE > c->front_probes) {
        FrontSlot *bigger = table_alloc(front_size(c->front_bits + 1));
        if (bigger) {
            table_free(c->front, front_size(c->front_bits));
            c->front = bigger;
            c->front_bits++;
        }
    }
    c->front_probes = c->front_misses = 0;
}
