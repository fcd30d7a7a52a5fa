/*
 * The chunk encoder's kernel in C (hot path of encoding), used by hf_bbpe/chunk_encoder.py.
 *
 * Same algorithm and result as the Python ChunkEncoder: repeatedly merge the adjacent pair with
 * the lowest merged id, leftmost first (minbpe's _encode_chunk, tiktoken's byte_pair_merge).
 * Chunks of up to SHORT_CHUNK tokens use that loop directly, keeping each pair's lookup until a
 * merge next to it changes it; longer ones a heap of (merged id, position) over a doubly linked
 * list, O(n log n).
 *
 * Which pairs merge depends on the mode (see chunk_encoder.py). An exactly keyed hash table of
 * (left id, right id) -> merged id answers it, behind a Bloom filter that turns away most pairs
 * it does not hold without touching it: in "merges" and "ignore_merges" modes it holds the
 * merges; in "ranks" mode (tiktoken's rule: two adjacent parts merge when their bytes together
 * are a token, by that token's id) it holds every split of every token into two tokens. (A
 * vocabulary with a byte string under two ids instead looks pairs up in the vocabulary's
 * byte-string table, whose polynomial hash of a concatenation comes from the parts' hashes.)
 * In "ignore_merges" and "ranks" modes a chunk whose bytes are a token is that token.
 *
 * Whole texts (encode_text, encode_text_array, encode_texts) are read as the str's UTF-8 (which
 * CPython keeps once made, see utf8_text), split by a _pretokenize scanner's UTF-8 instance, and
 * encoded without the GIL (a short text keeps it: GIL_HOLD_BYTES) and without a Python object per
 * chunk: a chunk is a slice of the UTF-8. Chunks split by other means (encode_chunks: the regex
 * module's strs) are joined into one UTF-8 buffer and taken the same way (see ChunkList). All
 * chunks go through caches that live as long as the kernel: a front cache of short chunks keyed by
 * their bytes; on a miss, a short chunk asks the piece cache of the chunks that needed BPE (see
 * PieceCache), then the seed table of every short token (see seed_build); a longer one asks the
 * vocabulary, then the piece cache.
 * They are taken in blocks (see BLOCK_CHUNKS), a pass over the block per step, so that the memory
 * loads of a block's chunks overlap instead of waiting one for another. Ids become a list through
 * one int object per id, made once.
 *
 * Threads (pthreads, inside one call): a batch runs over ranges of documents (encode_docs), one
 * long text over parts that hand over where their chunkings meet (encode_text_parallel); each
 * thread holds its own piece cache, and a big batch's lists are filled without the GIL
 * (ids_to_lists_unlocked).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
#define NPY_TARGET_VERSION NPY_1_22_API_VERSION
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "common/hash.h"
#include "scan/scanner.h"

/* The tables probed at random once per chunk (front cache, seed table, piece cache, vocabulary),
 * zeroed and aligned to a cache line. Large ones are asked for in huge pages where the system
 * has them: a random probe into megabytes of 4 KB pages misses the TLB most of the time. */
#define HUGE_PAGE ((size_t)1 << 21)

static void *table_alloc(size_t size) {
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

static void table_free(void *p, size_t size) {
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
static void huge_pages_advise(void *p, size_t size) {
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

#define SHORT_CHUNK 128
#define NO_MERGE INT64_MAX
#define HASH_BASE 0x9E3779B97F4A7C15ULL

/* A cache of the ids of the pieces that needed BPE (the whole-piece lookup found no token), keyed
 * exactly by the piece's bytes: an open-addressing table of slots pointing into an arena that holds
 * each entry's ids then its bytes. It lives as long as the kernel (pieces repeat across documents
 * and calls). Its table starts small and doubles as it fills (at most half full), so that a
 * small job holds little memory and a large corpus's distinct pieces (about 350K in 16 MB of mixed
 * text) all fit. When full it stops taking pieces (the frequent ones came first), and is emptied
 * only after as many pieces more found no room, so that it follows a corpus that
 * changes. A kernel keeps a few; a call holds one for itself (taken
 * with an atomic flag), so threads share no entry and need no lock. */
#define PCACHE_MIN_SLOTS ((uint64_t)1 << 16)
#define PCACHE_MAX_SLOTS ((uint64_t)1 << 21)
#define PCACHE_MAX_ENTRIES (PCACHE_MAX_SLOTS / 2)
#define PCACHE_ARENA_MAX ((size_t)64 << 20)
#define PCACHE_MAX_PIECE 256 /* bytes; longer pieces are rare and not kept */
#define PCACHE_POOL 4

typedef struct {
    uint64_t hash;
    uint32_t off;  /* of the entry's ids in the arena; its bytes follow them */
    uint16_t len;  /* bytes of the piece; 0: an empty slot */
    uint16_t nids;
} PieceSlot;

/* In front of both, a cache of short pieces, keyed by the piece's bytes themselves (up to 16
 * bytes: two 64-bit words): a hit costs no hash loop, no memcmp and one memory access, where the
 * vocabulary costs three (16 MB: the ~300K distinct short chunks of 16 MB of mixed text fit with
 * few collisions). A slot holds up to FRONT_IDS ids; a piece of more (short words of a script the
 * vocabulary has few merges for) holds where its ids are in the piece cache's arena, which only
 * grows until the piece cache is emptied, and the front cache with it. Two-way: a set of two
 * slots fills a cache line, the most recently used first, so that a rare piece that lands on a
 * frequent one's set pushes out the older of the two, not the frequent one. It starts at 16 MB and
 * doubles once, emptied, when a large job misses it often (see front_review): a corpus's distinct
 * short pieces then fit with fewer collisions (4% faster on 16 MB of mixed text), while a small
 * job holds half that. */
#define FRONT_MIN_BITS 19 /* slots, two per set */
#define FRONT_MAX_BITS 20
#define FRONT_REVIEW_PROBES ((uint64_t)1 << 21) /* about 12 MB of text */
#define FRONT_GROW_MISS_SHARE 32 /* it grows when more than 1 probe in 32 missed */

#define FRONT_MAX_PIECE 16
#define FRONT_IDS 3

typedef struct {
    uint64_t w0, w1;
    int32_t ids[FRONT_IDS]; /* nids > FRONT_IDS: ids[0] is the ids' offset in the piece cache's arena */
    uint16_t len; /* 0: an empty slot */
    uint16_t nids;
} FrontSlot;
static size_t front_size(int bits) { return ((size_t)1 << bits) * sizeof(FrontSlot); }

typedef struct {
    uint64_t key; /* 1 << 63 | left id << 32 | right id; 0: an empty slot */
    int32_t merged, ok;
} SeamSlot; /* an answer of compatible_or_merged() (see seam_of) */
#define SEAM_BITS 12

typedef struct {
    FrontSlot *front; /* a set of two slots per cache line */
    PieceSlot *slots;
    uint64_t slot_mask; /* slots - 1 */
    uint8_t *arena;
    size_t arena_len, arena_cap;
    uint32_t entries, refused, max_entries;
    int reset_due; /* full and refused max_entries pieces: emptied before the next block of chunks */
    int front_bits; /* the front cache's slots: 1 << front_bits */
    uint64_t front_probes, front_misses; /* since its last review (see front_review) */
    SeamSlot seams[1 << SEAM_BITS]; /* answers of compatible_or_merged() (see seam_of) */
} PieceCache;

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

static void pcache_free(PieceCache *c) {
    if (c) {
        table_free(c->front, front_size(c->front_bits));
        table_free(c->slots, (c->slot_mask + 1) * sizeof(PieceSlot));
        table_free(c->arena, c->arena_cap);
        free(c);
    }
}

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
static void pcache_reset(PieceCache *c) {
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
static int64_t pcache_put(PieceCache *c, PieceSlot *s, uint64_t h, uint64_t m_hash, const uint8_t *data, Py_ssize_t n,
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
        size_t cap = c->arena_cap ? c->arena_cap : (size_t)1 << 16;
        while (cap < c->arena_len + need) cap *= 2;
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

/* The pair table, open addressing with linear probing over any number of slots (fastrange of
 * the hash, not a mask, so that its load is what was chosen). A slot is one 64-bit word holding
 * left, right and merged ids in PAIR_BITS bits each: eight slots to a cache line, and the table
 * small enough to stay in the L2/L3 caches (most lookups miss L1). When an id needs more bits, a
 * slot is two words: (left << 32 | right), merged. An empty slot's first word is all ones. */
#define PAIR_BITS 21
#define PAIR_FIELD ((UINT64_C(1) << PAIR_BITS) - 1)
#define PAIR_EMPTY UINT64_MAX
#define PAIR_LOAD_NUM 2 /* slots per pair: PAIR_LOAD_NUM / PAIR_LOAD_DEN */
#define PAIR_LOAD_DEN 1

/* Token i of the vocabulary: tok_buf[start : start + len], with its id. */
typedef struct {
    uint32_t start;
    int32_t len, id;
} TokInfo;

typedef struct {
    uint32_t tag; /* high bits of the mixed hash */
    int32_t tok;  /* token index, -1 for an empty slot */
} Slot;

typedef struct {
    PyObject_HEAD
    uint32_t *byte_pairs; /* rank_of(byte_ids[x], byte_ids[y]) (NO_RANK: none) at x * 256 + y: the first pairs of every chunk */
    uint64_t *pairs; /* (left id, right id) -> merged id; NULL in "ranks" mode with duplicate tokens */
    uint64_t pair_cap; /* slots */
    int pair_words; /* per slot: 1 (packed) or 2 (an id above PAIR_FIELD - 1) */
    uint64_t *pair_filter; /* a Bloom filter of the pairs in the table */
    int pair_filter_shift; /* 64 - log2(its words) */
    int32_t byte_ids[256];
    Py_ssize_t cache_max;
    int rank_mode;
    /* the vocabulary as a byte-string hash table (NULL in "merges" mode) */
    uint8_t *tok_buf;
    TokInfo *toks;
    Py_ssize_t tok_count;
    uint64_t *tok_hash;
    Slot *slots;
    uint64_t tok_mask;
    uint64_t *powers;  /* HASH_BASE^k for k up to the longest token */
    int32_t max_len;
    int32_t *index_of; /* token index of each id up to max_id, -1 if none ("ranks" mode) */
    int64_t max_id;
    int64_t dup_first, dup_second; /* ids of the first two tokens found with the same bytes, or -1 */
    int64_t unmergeable; /* "ranks" mode: the id no merge makes (tiktoken's u32::MAX rank), or -1 */
    PyObject **id_objects; /* the int of each id below id_objects_len, made on first use */
    Py_ssize_t id_objects_len;
    uint32_t *id_refs; /* id_objects_len zeros between calls of ids_to_list (see LIST_COUNTED_MIN_IDS) */
    FrontSlot *seed;   /* the tokens of 2 .. FRONT_MAX_PIECE bytes keyed like the front cache (see seed_build) */
    uint64_t seed_mask;
    int seed_bits;
    PieceCache *pcache[PCACHE_POOL]; /* allocated by the first call that takes the slot */
    int pcache_busy[PCACHE_POOL];
    Py_ssize_t ids_per_kb; /* ids per 1024 bytes of UTF-8 in the last large text (see ids_estimate) */
    /* "merges" mode, when every token is a byte or made by a merge (see build_tok_len), by id: */
    int32_t *tok_len;              /* its length in bytes */
    int32_t *tok_left, *tok_right; /* the two parts of the merge that makes it (-1: a byte) */
    const PretokScanner *part_scanner; /* cuts long pieces into parts (see encode_by_parts), or NULL */
} ChunkBPE;

#if defined(__GNUC__) || defined(__clang__)
/* A free piece cache of the kernel, marked busy, or NULL (all busy, or out of memory): slot first
 * if free, so that the same part of a call's work finds the cache it warmed. No GIL needed. */
static PieceCache *pcache_take_from(ChunkBPE *self, int first, int *slot) {
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

static void pcache_give(ChunkBPE *self, int slot) {
    if (slot >= 0) __atomic_store_n(&self->pcache_busy[slot], 0, __ATOMIC_RELEASE);
}
#else
static PieceCache *pcache_take_from(ChunkBPE *self, int first, int *slot) { (void)self; (void)first; (void)slot; return NULL; }
static void pcache_give(ChunkBPE *self, int slot) { (void)self; (void)slot; }
#endif

static PieceCache *pcache_take(ChunkBPE *self, int *slot) { return pcache_take_from(self, 0, slot); }

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
static void pcache_warm_slots(ChunkBPE *self, int num_threads) {
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

/* An empty pair table for count pairs; 0, or -1 when out of memory. max_id: the largest id of a
 * pair or a merge (-1: unknown); with the byte ids, it decides whether slots can be packed. */
static int pairs_alloc(ChunkBPE *self, uint64_t count, int64_t max_id) {
    uint64_t cap = count * PAIR_LOAD_NUM / PAIR_LOAD_DEN + 16;
    if (cap >= UINT32_MAX) return -1;
    int packed = max_id >= 0 && max_id < (int64_t)PAIR_FIELD; /* all ones in a field is no id */
    for (int b = 0; b < 256; b++)
        if (self->byte_ids[b] < 0 || self->byte_ids[b] >= (int64_t)PAIR_FIELD) packed = 0;
    self->pair_words = packed ? 1 : 2;
    self->pairs = malloc(cap * self->pair_words * sizeof(uint64_t));
    if (!self->pairs) return -1;
    memset(self->pairs, 0xff, cap * self->pair_words * sizeof(uint64_t));
    self->pair_cap = cap;
    int words_log2 = 3; /* at least 8 words, so that the shift stays below 64 */
    while (words_log2 < 34 && ((uint64_t)64 << words_log2) < count * FILTER_BITS_PER_PAIR) words_log2++;
    self->pair_filter_shift = 64 - words_log2;
    if (!(self->pair_filter = calloc((size_t)1 << words_log2, sizeof(uint64_t)))) return -1;
    return 0;
}

static void pairs_put(ChunkBPE *self, uint32_t a, uint32_t b, int32_t merged) {
    uint64_t h = filter_hash(a, b);
    self->pair_filter[h >> self->pair_filter_shift] |= filter_bits(h);
    uint64_t *s = (uint64_t *)pair_slot(self, a, b), *end = self->pairs + self->pair_cap * self->pair_words;
    uint64_t key = pair_key(self, a, b);
    if (self->pair_words == 1) {
        while (*s != PAIR_EMPTY && (*s & ~PAIR_FIELD) != key)
            if (++s == end) s = self->pairs;
        *s = key | (uint64_t)merged;
        return;
    }
    while (s[0] != PAIR_EMPTY && s[0] != key)
        if ((s += 2) == end) s = self->pairs;
    s[0] = key;
    s[1] = (uint64_t)merged;
}

static inline int64_t rank_below(const ChunkBPE *self, int32_t a, int32_t b, int64_t limit) {
    int64_t r = rank_of(self, a, b);
    return r < limit ? r : NO_MERGE;
}

/* A merge's rank (merged id) in 32 bits: ids are at most INT32_MAX, and NO_MERGE becomes NO_RANK. */
#define NO_RANK UINT32_MAX

/* Merge the lowest pair below limit, leftmost on ties, one at a time; each pair's rank is looked
 * up once and again only when a merge next to it changes it. bytes (or NULL): the chunk the ids
 * are the single bytes of, whose pairs' ranks the dense byte-pair table gives.
 * The pieces are short: a branch-free scan finds the lowest rank, a loop closes the gap. */
static Py_ssize_t merge_short(const ChunkBPE *self, int32_t *ids, Py_ssize_t n, int64_t limit, const uint8_t *bytes) {
    uint32_t ranks[SHORT_CHUNK + 1];
    if (n < 2) return n;
    ranks[n - 1] = NO_RANK; /* read (never used) by the loop that closes the gap */
    if (bytes && self->byte_pairs) {
        for (Py_ssize_t i = 0; i + 1 < n; i++) {
            uint32_t r = self->byte_pairs[(bytes[i] << 8) | bytes[i + 1]];
            ranks[i] = (int64_t)r < limit ? r : NO_RANK;
        }
    } else {
        for (Py_ssize_t i = 0; i + 1 < n; i++) ranks[i] = (uint32_t)rank_below(self, ids[i], ids[i + 1], limit);
    }
    while (n >= 2) {
        uint32_t best = ranks[0];
        Py_ssize_t at = 0;
        for (Py_ssize_t i = 1; i + 1 < n; i++) {
            uint32_t r = ranks[i];
            at = r < best ? i : at;
            best = r < best ? r : best;
        }
        if (best == NO_RANK) break;
        ids[at] = (int32_t)best;
        n--;
        for (Py_ssize_t i = at + 1; i < n; i++) { ids[i] = ids[i + 1]; ranks[i] = ranks[i + 1]; }
        if (self->pairs) { /* the two lookups are independent: start both memory loads at once */
            if (at + 1 < n) PREFETCH(pair_slot(self, (uint32_t)ids[at], (uint32_t)ids[at + 1]));
            if (at > 0) PREFETCH(pair_slot(self, (uint32_t)ids[at - 1], (uint32_t)ids[at]));
        }
        if (at + 1 < n) ranks[at] = (uint32_t)rank_below(self, ids[at], ids[at + 1], limit);
        if (at > 0) ranks[at - 1] = (uint32_t)rank_below(self, ids[at - 1], ids[at], limit);
    }
    return n;
}

typedef struct { int64_t rank; Py_ssize_t pos; } Job;

static inline int job_less(Job x, Job y) { return x.rank < y.rank || (x.rank == y.rank && x.pos < y.pos); }

static void job_push(Job *heap, Py_ssize_t *len, Job item) {
    Py_ssize_t i = (*len)++;
    while (i > 0) {
        Py_ssize_t p = (i - 1) / 2;
        if (!job_less(item, heap[p])) break;
        heap[i] = heap[p];
        i = p;
    }
    heap[i] = item;
}

static Job job_pop(Job *heap, Py_ssize_t *len) {
    Job top = heap[0], last = heap[--(*len)];
    Py_ssize_t i = 0, n = *len;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && job_less(heap[c + 1], heap[c])) c++;
        if (!job_less(heap[c], last)) break;
        heap[i] = heap[c];
        i = c;
    }
    if (n > 0) heap[i] = last;
    return top;
}

/* Heap over a linked list, merges below limit; returns the new length or -1 (memory). */
static Py_ssize_t merge_long(const ChunkBPE *self, int32_t *ids, Py_ssize_t n, int64_t limit) {
    Py_ssize_t *nxt = malloc(n * sizeof(Py_ssize_t)), *prv = malloc(n * sizeof(Py_ssize_t));
    /* Each merge pushes at most two jobs, and there are at most n - 1 merges. */
    Job *heap = malloc((3 * n + 1) * sizeof(Job));
    if (!nxt || !prv || !heap) { free(nxt); free(prv); free(heap); return -1; }
    Py_ssize_t hlen = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        nxt[i] = i + 1 < n ? i + 1 : -1;
        prv[i] = i - 1;
    }
    for (Py_ssize_t i = 0; i + 1 < n; i++) {
        int64_t r = rank_below(self, ids[i], ids[i + 1], limit);
        if (r != NO_MERGE) { Job job = {r, i}; job_push(heap, &hlen, job); }
    }
    while (hlen > 0) {
        Job job = job_pop(heap, &hlen);
        Py_ssize_t i = job.pos, j = nxt[i];
        if (ids[i] < 0 || j < 0 || rank_of(self, ids[i], ids[j]) != job.rank) continue;
        ids[i] = (int32_t)job.rank;
        ids[j] = -1;
        Py_ssize_t k = nxt[j];
        nxt[i] = k;
        if (k >= 0) {
            prv[k] = i;
            int64_t r = rank_below(self, ids[i], ids[k], limit);
            if (r != NO_MERGE) { Job nj = {r, i}; job_push(heap, &hlen, nj); }
        }
        Py_ssize_t p = prv[i];
        if (p >= 0) {
            int64_t r = rank_below(self, ids[p], ids[i], limit);
            if (r != NO_MERGE) { Job nj = {r, p}; job_push(heap, &hlen, nj); }
        }
    }
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i >= 0; i = nxt[i]) ids[m++] = ids[i];
    free(nxt); free(prv); free(heap);
    return m;
}

/* A growable array of ids. */
typedef struct {
    int32_t *ids;
    Py_ssize_t len, cap;
} IdBuf;

static int idbuf_reserve(IdBuf *b, Py_ssize_t extra) {
    if (b->len + extra <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra) cap *= 2;
    int32_t *ids = realloc(b->ids, (size_t)cap * sizeof(int32_t));
    if (!ids) return -1;
    huge_pages_advise(ids + b->len, (size_t)(cap - b->len) * sizeof(int32_t)); /* (the part not written yet) */
    b->ids = ids;
    b->cap = cap;
    return 0;
}

/* The ids buffer of a large call, kept when its owner is done with it (one, of SPARE_MIN_IDS to
 * SPARE_MAX_IDS ids) for the next large call to fill: a new buffer of megabytes comes from the
 * system in fresh pages, each zeroed at a page fault on first touch, which costs about an eighth
 * of the time of encoding the text; a kept one's pages are there. Read and written with the GIL. */
#define SPARE_MIN_IDS ((Py_ssize_t)1 << 18)
#define SPARE_MAX_IDS ((Py_ssize_t)1 << 24)
static int32_t *spare_ids;
static Py_ssize_t spare_cap;

/* idbuf_reserve of an empty buffer for a call, from the spare buffer when it is large enough to
 * be worth it and not more than twice what the call needs (a document's array keeps only its
 * ids, see id_array_take: the rest of a larger spare would go back to the system and the next
 * large call pay for it again). Needs the GIL. */
static int idbuf_reserve_for_call(IdBuf *b, Py_ssize_t extra) {
    if (!b->ids && extra >= SPARE_MIN_IDS && spare_ids && spare_cap / 2 <= extra) {
        b->ids = spare_ids;
        b->cap = spare_cap;
        spare_ids = NULL;
    }
    if (b->len + extra <= b->cap) return 0;
    /* exactly what is asked (not doubled: the estimate is made for it) */
    int32_t *ids = realloc(b->ids, (size_t)(b->len + extra) * sizeof(int32_t));
    if (!ids) return -1;
    huge_pages_advise(ids + b->len, (size_t)extra * sizeof(int32_t));
    b->ids = ids;
    b->cap = b->len + extra;
    return 0;
}

/* How many ids to make room for in a text of bytes of UTF-8: as many per byte as the last large
 * text had, and a sixteenth more (the kernel starts from a third of the bytes, about what mixed
 * text takes), so that the buffer a large call fills is neither regrown nor, in an array, cut
 * back (see id_array_take). */
static Py_ssize_t ids_estimate(const ChunkBPE *self, Py_ssize_t bytes) {
    Py_ssize_t ids = bytes / 1024 * self->ids_per_kb + (bytes % 1024) * self->ids_per_kb / 1024;
    return ids + ids / 16 + 64;
}

/* Remember the ids per byte of a large text (ids_estimate). Needs the GIL. */
static void ids_learn(ChunkBPE *self, Py_ssize_t bytes, Py_ssize_t ids) {
    if (bytes >= ((Py_ssize_t)1 << 16)) self->ids_per_kb = (Py_ssize_t)((double)ids * 1024 / (double)bytes) + 1;
}

/* Free ids (cap of them), or keep them as the spare buffer (the larger of the two is kept). Needs
 * the GIL. */
static void ids_release(int32_t *ids, Py_ssize_t cap) {
    if (ids && cap >= SPARE_MIN_IDS && cap <= SPARE_MAX_IDS && (!spare_ids || spare_cap < cap)) {
        free(spare_ids);
        spare_ids = ids;
        spare_cap = cap;
        return;
    }
    free(ids);
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

/* After FRONT_REVIEW_PROBES probes of the front cache: one that missed more than one in
 * FRONT_GROW_MISS_SHARE of them doubles (up to FRONT_MAX_BITS), emptied; it stays as it is when
 * there is no memory for it. */
static void front_review(PieceCache *c) {
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

/* The seed table: every token of 2 .. FRONT_MAX_PIECE bytes (its lowest id) in an open-addressing
 * table keyed by its bytes like the front cache, so that a chunk that is a whole short token is
 * found in one probe without hashing its bytes, and a short chunk that misses it is known to be no
 * token without a vocabulary lookup. Read-only once built, shared by threads; built by the first
 * call that encodes a whole text (under the GIL), not at load. 0, or -1 when out of memory. */
static int seed_build(ChunkBPE *self) {
    if (self->seed || !self->slots) return 0;
    const TokInfo *toks = self->toks;
    Py_ssize_t count = self->tok_count, short_count = 0;
    Py_ssize_t buf_len = count ? (Py_ssize_t)toks[count - 1].start + toks[count - 1].len : 0; /* laid out in order */
    for (Py_ssize_t i = 0; i < count; i++) short_count += toks[i].len >= 2 && toks[i].len <= FRONT_MAX_PIECE;
    int bits = 4;
    while (((Py_ssize_t)1 << bits) < short_count + short_count / 2 + 2) bits++;
    uint64_t mask = ((uint64_t)1 << bits) - 1;
    FrontSlot *seed = table_alloc((mask + 1) * sizeof(FrontSlot));
    if (!seed) return -1;
    /* The tokens in order (their bytes lie one after another), SEED_BATCH at a time: the slots of
     * a batch are prefetched before any is written, so that their cache misses overlap. A byte
     * string under two ids keeps the lowest, as the vocabulary's table does. */
    enum { SEED_BATCH = 32 };
    struct { uint64_t w0, w1, k; int32_t n, id; } batch[SEED_BATCH];
    for (Py_ssize_t i = 0; i < count;) {
        int b = 0;
        for (; i < count && b < SEED_BATCH; i++) {
            Py_ssize_t n = toks[i].len;
            if (n < 2 || n > FRONT_MAX_PIECE) continue;
            front_words(self->tok_buf + toks[i].start, n, (Py_ssize_t)toks[i].start + 16 <= buf_len, &batch[b].w0,
                        &batch[b].w1);
            batch[b].k = front_hash(batch[b].w0, batch[b].w1, n) >> (64 - bits);
            batch[b].n = (int32_t)n;
            batch[b].id = toks[i].id;
            PREFETCH(&seed[batch[b].k]);
            b++;
        }
        for (int j = 0; j < b; j++) {
            for (uint64_t k = batch[j].k;; k = (k + 1) & mask) {
                FrontSlot *slot = &seed[k];
                if (!slot->len) {
                    slot->w0 = batch[j].w0;
                    slot->w1 = batch[j].w1;
                    slot->len = (uint16_t)batch[j].n;
                    slot->nids = 1;
                    slot->ids[0] = batch[j].id;
                    break;
                }
                if (slot->w0 == batch[j].w0 && slot->w1 == batch[j].w1 && slot->len == (uint16_t)batch[j].n) {
                    if (batch[j].id < slot->ids[0]) slot->ids[0] = batch[j].id;
                    break;
                }
            }
        }
    }
    self->seed_bits = bits;
    self->seed_mask = mask;
    self->seed = seed;
    return 0;
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

static int encode_by_parts(const ChunkBPE *self, const uint8_t *data, Py_ssize_t n, IdBuf *out, PieceCache *cache);

/* Whether a piece of n bytes is encoded by parts (see encode_by_parts) when cache is held (once the
 * scanners' class table is there). */
static inline int by_parts(const ChunkBPE *self, Py_ssize_t n, const PieceCache *cache) {
    return cache && self->part_scanner && n > FRONT_MAX_PIECE && *self->part_scanner->classes;
}

/* Append the ids of the piece data[0:n] (n >= 2) that the front cache does not hold: the
 * vocabulary, then the piece cache, then BPE; out has room for n + 1 more ids. seeded: the piece
 * is short and the kernel has a seed table (whose slot seed_slot is the piece's first), which
 * then answers for the vocabulary, after the piece cache (a piece there is no token, and most
 * short pieces that reach here are there). front: the
 * piece's front-cache set (keys w0, w1) to fill, or NULL; h and mixed: the piece's hash and mix64
 * of it (bytes_hash, which the vocabulary needs; a seeded piece's front_hash, since only the piece
 * cache reads it then; 0 when neither the vocabulary table nor cache exists). cache (may be NULL) is a
 * piece cache this call holds. parts: a long piece may be encoded by parts (see encode_by_parts),
 * and is then not looked up or kept whole. 0, or -1 when out of memory. Needs no GIL. */
static int encode_uncached(const ChunkBPE *self, const uint8_t *data, Py_ssize_t n, IdBuf *out, PieceCache *cache,
                           FrontSlot *front, uint64_t w0, uint64_t w1, uint64_t h, uint64_t mixed, int seeded,
                           uint64_t seed_slot, int parts) {
    int32_t *ids = out->ids + out->len;
    if (self->slots && !seeded) {
        int64_t t = token_lookup_mixed(self, mixed, data, n);
        if (t >= 0) {
            ids[0] = self->toks[t].id;
            out->len++;
            front_put(front, w0, w1, n, ids, 1, -1);
            return 0;
        }
    }
    if (parts && by_parts(self, n, cache)) return encode_by_parts(self, data, n, out, cache); /* (mostly new pieces) */
    PieceSlot *entry = NULL;
    if (cache && n <= PCACHE_MAX_PIECE) {
        entry = pcache_find(cache, h, mixed >> 20, data, n);
        if (entry->len) {
            memcpy(ids, cache->arena + entry->off, entry->nids * sizeof(int32_t));
            out->len += entry->nids;
            front_put(front, w0, w1, n, ids, entry->nids, entry->off);
            return 0;
        }
    }
    if (seeded) {
        int32_t id = seed_find(self, seed_slot, w0, w1, n);
        if (id >= 0) {
            ids[0] = id;
            out->len++;
            front_put(front, w0, w1, n, ids, 1, -1);
            return 0;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) ids[i] = self->byte_ids[data[i]];
    Py_ssize_t m = n <= SHORT_CHUNK ? merge_short(self, ids, n, NO_MERGE, data) : merge_long(self, ids, n, NO_MERGE);
    if (m < 0) return -1;
    int64_t off = entry ? pcache_put(cache, entry, h, mixed >> 20, data, n, ids, m) : -1;
    front_put(front, w0, w1, n, ids, m, off);
    out->len += m;
    return 0;
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

/* Long pieces by parts ("merges" mode). BPE gives the one split of a text into tokens whose
 * neighbours are compatible two by two: BPE on the bytes of two neighbours gives those two back.
 * (BPE takes merges in the order of the ids they make. Up to the first merge across the boundary
 * of two of its final tokens, it takes on their bytes the merges it takes on the two alone, so on
 * the two alone it would take that one too: the final tokens are compatible. Conversely, given a
 * split into compatible tokens, BPE on the text takes, within each token, the merges it takes on
 * the token alone until a first merge across two of them, which BPE on those two alone would
 * take as well, against their compatibility: so it takes none and ends on the split.) A long
 * piece (SuperBPE's chunks are sentences) is therefore encoded from its parts, as part_scanner
 * cuts it (words), each through the caches; where a part meets the tokens before it, the two
 * tokens at the seam are checked (compatible(), from the merges alone), and where they are not
 * (" of" " the": a superword) the bytes of a window of tokens around the seam are encoded again as
 * one piece, through the caches too, the window widened on each side until its first and last
 * tokens are compatible with their neighbours outside (the first window is the two tokens' own
 * merge when that is what stops them). Parts, seams and windows repeat (words, "of the"), so a long
 * piece costs a cache hit per word and a few lookups per seam instead of a merge per byte. A
 * window wider than PARTS_WINDOW_MAX bytes gives up: the piece goes to BPE whole. Tests hold this
 * to BPE (the Python ChunkEncoder) and to the tokenizers library. */
#define PARTS_WINDOW_MAX 256
#define PARTS_BATCH 32 /* parts cut at a time */

/* Append the ids of the piece data[0:n] (n >= 1) to out, through the caches as encode_range takes
 * a chunk, but one at a time and not by parts: BPE's ids ("merges" mode). end: how far bytes may
 * be read (for the front cache's key). 0, or -1 when out of memory. */
static int encode_cached(const ChunkBPE *self, const uint8_t *data, Py_ssize_t n, const uint8_t *end, IdBuf *out,
                         PieceCache *cache) {
    if (idbuf_reserve(out, n + 1 + FRONT_IDS) < 0) return -1;
    if (n == 1) {
        out->ids[out->len++] = self->byte_ids[data[0]];
        return 0;
    }
    FrontSlot *front = NULL;
    uint64_t w0 = 0, w1 = 0;
    if (n <= FRONT_MAX_PIECE) {
        front_words(data, n, data + 16 <= end, &w0, &w1);
        front = front_at(cache, front_hash(w0, w1, n));
        for (int k = 0; k < 2; k++) {
            const FrontSlot *f = &front[k];
            if (f->w0 == w0 && f->w1 == w1 && f->len == (uint16_t)n) {
                const int32_t *ids = f->nids > FRONT_IDS ? (const int32_t *)(cache->arena + f->ids[0]) : f->ids;
                memcpy(out->ids + out->len, ids, (size_t)f->nids * sizeof(int32_t));
                out->len += f->nids;
                return 0;
            }
        }
    }
    uint64_t h = bytes_hash(data, n);
    return encode_uncached(self, data, n, out, cache, front, w0, w1, h, mix64(h), 0, 0, 0);
}

/* Whether the tokens a, then b, are compatible, from the merges alone; when not because their own
 * merge is the first taken across them, *merged is the token BPE makes of them (else -1). BPE on
 * their bytes takes merges in the order of the ids they make (a merge's parts are made before
 * it): it builds a and b as alone until a merge across them. The last token on a's side is, in turn, a byte, ..., a's
 * right part, a (a's right spine), each there from when it is made (at its id; a byte from the
 * start) until the one above it is made; the first on b's side likewise runs up b's left spine.
 * A merge of such an x and y is taken if it comes while both are there (its id, which is above
 * theirs, below the ids of the two above them): then a and b are not compatible. The same merge
 * at two places is taken leftmost first: if it is the one that makes the token above y (x, y and
 * y's neighbour are one token, "0" "00"), it is taken across first; if the one that makes the
 * token above x, within a first. Only an x and y there at the same time are looked up (ids fall
 * down a spine: the inner loop stops once the y above is made before x). */
static inline int compatible_or_merged(const ChunkBPE *self, int32_t a, int32_t b, int32_t *merged) {
    const int32_t *left = self->tok_left, *right = self->tok_right;
    int64_t x_until = NO_MERGE, whole = NO_MERGE; /* whole: the merge of a and b, when taken */
    *merged = -1;
    for (int32_t x = a, x_down; x >= 0; x_until = x, x = x_down) {
        x_down = right[x];
        int64_t x_made = x_down < 0 ? -1 : x, y_until = NO_MERGE;
        for (int32_t y = b, y_down; y >= 0 && x_made < y_until; y_until = y, y = y_down) {
            y_down = left[y];
            if ((y_down < 0 ? -1 : y) >= x_until) continue;
            int64_t r = rank_of(self, x, y);
            if (r == NO_MERGE || r >= x_until || r > y_until) continue;
            if (x == a && y == b) whole = r; /* (looked up first) */
            else if (r < whole) return 0;
        }
    }
    if (whole == NO_MERGE) return 1;
    *merged = (int32_t)whole;
    return 0;
}

/* compatible_or_merged() through a small direct-mapped table of the cache's (64 KB, which stays in
 * the core's own caches): the seams between frequent words repeat (half of them hit it on mixed
 * text). */
static inline int seam_of(const ChunkBPE *self, int32_t a, int32_t b, int32_t *merged, PieceCache *cache) {
    uint64_t key = ((uint64_t)1 << 63) | ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    SeamSlot *slot = &cache->seams[(key * 0x9E3779B97F4A7C15ULL) >> (64 - SEAM_BITS)];
    if (slot->key == key) {
        *merged = slot->merged;
        return slot->ok;
    }
    int ok = compatible_or_merged(self, a, b, merged);
    *slot = (SeamSlot){key, *merged, ok};
    return ok;
}

static inline int compatible(const ChunkBPE *self, int32_t a, int32_t b) {
    int32_t merged;
    return compatible_or_merged(self, a, b, &merged);
}

/* BPE on the whole piece data[0:n], its ids in place of out->ids[base:]; 0, or -1 when out of memory. */
static int encode_whole(const ChunkBPE *self, const uint8_t *data, Py_ssize_t n, IdBuf *out, Py_ssize_t base) {
    out->len = base;
    if (idbuf_reserve(out, n + 1) < 0) return -1;
    int32_t *ids = out->ids + base;
    for (Py_ssize_t i = 0; i < n; i++) ids[i] = self->byte_ids[data[i]];
    Py_ssize_t m = n <= SHORT_CHUNK ? merge_short(self, ids, n, NO_MERGE, data) : merge_long(self, ids, n, NO_MERGE);
    if (m < 0) return -1;
    out->len = base + m;
    return 0;
}

/* Append BPE's ids of the piece data[0:n] to out by parts (see above), PARTS_BATCH parts at a time:
 * first every part's tokens, one after another (their cache lookups started together), then part
 * by part each seam is checked and the part's tokens moved down after the tokens kept so far, the
 * loads of the next seam's check started meanwhile. 0, or -1 when out of memory. */
static int encode_by_parts(const ChunkBPE *self, const uint8_t *data, Py_ssize_t n, IdBuf *out, PieceCache *cache) {
    const PretokText t = {PRETOK_UTF8_KIND, data, n};
    const uint8_t *end = data + n;
    const int32_t *len = self->tok_len;
    Py_ssize_t base = out->len, kept = base; /* out->ids[base:kept]: the tokens of data[:pos], neighbours compatible */
    int32_t window[PARTS_WINDOW_MAX];
    Py_ssize_t ends[PARTS_BATCH], group[PARTS_BATCH + 1]; /* part k: bytes up to ends[k], tokens from group[k] */
    for (Py_ssize_t pos = 0; pos < n;) {
        int count = (int)chunk_ends(self->part_scanner, &t, pos, ends, PARTS_BATCH);
        for (int k = 0; k < count; k++) {
            Py_ssize_t at = k ? ends[k - 1] : pos, size = ends[k] - at;
            if (size < 2 || size > FRONT_MAX_PIECE) continue;
            uint64_t w0, w1;
            front_words(data + at, size, data + at + 16 <= end, &w0, &w1);
            PREFETCH(front_at(cache, front_hash(w0, w1, size)));
        }
        out->len = kept;
        for (int k = 0; k < count; k++) {
            Py_ssize_t at = k ? ends[k - 1] : pos;
            group[k] = out->len;
            if (encode_cached(self, data + at, ends[k] - at, end, out, cache) < 0) return -1;
        }
        group[count] = out->len;
        for (int k = 0; k < count; k++) {
            int32_t *ids = out->ids;
            Py_ssize_t g = group[k], size = group[k + 1] - g, at = k ? ends[k - 1] : pos;
            if (k + 1 < count) { /* the next seam's first loads: its tokens' parts, and the pair of the two */
                uint32_t a = (uint32_t)ids[group[k + 1] - 1], b = (uint32_t)ids[group[k + 1]];
                PREFETCH(&self->tok_right[a]);
                PREFETCH(&self->tok_left[b]);
                PREFETCH(&self->pair_filter[filter_hash(a, b) >> self->pair_filter_shift]);
                PREFETCH(pair_slot(self, a, b));
            }
            int32_t merged = -1; /* what the first window is, when one token */
            if (kept == base || seam_of(self, ids[kept - 1], ids[g], &merged, cache)) {
                memmove(ids + kept, ids + g, (size_t)size * sizeof(int32_t));
                kept += size;
                continue;
            }
            /* the window: the kept tokens lo .. kept - 1 and the part's first kk, bytes from .. to */
            Py_ssize_t lo = kept - 1, kk = 1, from = at - len[ids[lo]], to = at + len[ids[g]];
            for (;;) {
                if (to - from > PARTS_WINDOW_MAX) return encode_whole(self, data, n, out, base); /* give up */
                Py_ssize_t r = out->len;
                if (merged >= 0 && idbuf_reserve(out, 1) == 0) out->ids[out->len++] = merged;
                else if (encode_cached(self, data + from, to - from, end, out, cache) < 0) return -1;
                merged = -1;
                ids = out->ids;
                Py_ssize_t rn = out->len - r;
                int left = lo == base || compatible(self, ids[lo - 1], ids[r]);
                int right = kk == size || compatible(self, ids[r + rn - 1], ids[g + kk]);
                out->len = r;
                if (!left || !right) {
                    if (!left) from -= len[ids[--lo]];
                    if (!right) to += len[ids[g + kk++]];
                    continue;
                }
                /* the window's tokens for tokens lo .. kept - 1 and g .. g + kk - 1, then the rest of the part */
                memcpy(window, ids + r, (size_t)rn * sizeof(int32_t));
                Py_ssize_t rest = size - kk, shift = lo + rn + rest - group[k + 1];
                if (shift > 0) { /* more tokens than they replace: the next parts move up */
                    if (idbuf_reserve(out, shift) < 0) return -1;
                    ids = out->ids;
                    Py_ssize_t next = group[k + 1];
                    memmove(ids + next + shift, ids + next, (size_t)(r - next) * sizeof(int32_t));
                    for (int j = k + 1; j <= count; j++) group[j] += shift;
                    out->len = group[count];
                }
                memmove(ids + lo + rn, ids + g + kk, (size_t)rest * sizeof(int32_t));
                memcpy(ids + lo, window, (size_t)rn * sizeof(int32_t));
                kept = lo + rn + rest;
                break;
            }
        }
        pos = ends[count - 1];
    }
    out->len = kept;
    return 0;
}

/* Append the ids of one chunk of n bytes to out, with no cache; 0, or -1 when out of memory. */
static int encode_piece(const ChunkBPE *self, const uint8_t *data, Py_ssize_t n, IdBuf *out) {
    if (idbuf_reserve(out, n + 1) < 0) return -1;
    if (n == 1) {
        out->ids[out->len++] = self->byte_ids[data[0]];
        return 0;
    }
    uint64_t h = self->slots ? bytes_hash(data, n) : 0;
    return encode_uncached(self, data, n, out, NULL, NULL, 0, 0, h, self->slots ? mix64(h) : 0, 0, 0, 0);
}

/* A list of LIST_COUNTED_MIN_IDS ids or more takes its references counted: each id adds one to
 * its count in id_refs (a table of 4 bytes an id, which the core's cache holds), and the counts are
 * added to the int objects once at the end, instead of one increment per id in an int object
 * somewhere in the megabytes that a text's distinct ids' objects span (a cache miss each). */
#define LIST_COUNTED_MIN_IDS ((Py_ssize_t)1 << 16)

/* Fill items[from:n] with the int objects of ids[from:n], each reference counted in refs (see
 * LIST_COUNTED_MIN_IDS), then add the counts to the objects and zero refs again. Returns where it
 * stopped: n, or before an id that has no slot in id_objects (the caller goes on the plain way);
 * -1 when out of memory (the items before it hold their references). Needs the GIL. */
static Py_ssize_t ids_to_items_counted(ChunkBPE *self, PyObject **items, const int32_t *ids, Py_ssize_t n,
                                       uint32_t *refs) {
    PyObject **objects = self->id_objects;
    uint32_t limit = (uint32_t)self->id_objects_len;
    Py_ssize_t i = 0;
    for (; i < n; i++) {
        uint32_t id = (uint32_t)ids[i];
        if (id >= limit) break;
        PyObject *v = objects[id];
        if (!v && !(v = objects[id] = PyLong_FromLong((long)id))) { i = -1; break; }
        items[i] = v;
        refs[id]++;
    }
    for (uint32_t k = 0; k < limit; k++) {
        if (refs[k]) {
            Py_SET_REFCNT(objects[k], Py_REFCNT(objects[k]) + refs[k]);
            refs[k] = 0;
        }
    }
    return i;
}

/* A list of the ids; the int object of each id is made once and kept (id_objects), so that a
 * list costs a reference per id instead of an allocation. Needs the GIL. */
static PyObject *ids_to_list(ChunkBPE *self, const int32_t *ids, Py_ssize_t n) {
    PyObject *out = PyList_New(n);
    if (!out) return NULL;
    if (!self->id_objects && self->id_objects_len > 0)
        self->id_objects = calloc((size_t)self->id_objects_len, sizeof(PyObject *));
    PyObject **objects = self->id_objects;
    Py_ssize_t i = 0;
    huge_pages_advise(((PyListObject *)out)->ob_item, (size_t)n * sizeof(PyObject *));
    if (objects && n >= LIST_COUNTED_MIN_IDS && n < (Py_ssize_t)UINT32_MAX) {
        if (!self->id_refs) self->id_refs = calloc((size_t)self->id_objects_len, sizeof(uint32_t));
        if (self->id_refs && (i = ids_to_items_counted(self, ((PyListObject *)out)->ob_item, ids, n, self->id_refs)) < 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    for (; i < n; i++) {
        int32_t id = ids[i];
        PyObject *v;
        if (objects && id >= 0 && id < self->id_objects_len) {
            v = objects[id];
            if (!v && !(v = objects[id] = PyLong_FromLong(id))) { Py_DECREF(out); return NULL; }
            Py_INCREF(v);
        } else if (!(v = PyLong_FromLong(id))) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, v);
    }
    return out;
}

/* Encode raw bytes into a new list of ids. */
static PyObject *encode_raw(ChunkBPE *self, const unsigned char *data, Py_ssize_t n) {
    IdBuf buf = {NULL, 0, 0};
    PyObject *out = encode_piece(self, data, n, &buf) < 0 ? PyErr_NoMemory() : ids_to_list(self, buf.ids, buf.len);
    free(buf.ids);
    return out;
}

#define DOC_NO_MEMORY (-1)
#define LISTS_UNLOCKED_MIN_IDS (1 << 16) /* below this, ids_to_lists_unlocked's fixed costs do not pay */
#define DOC_SURROGATE (-2) /* a lone surrogate: the caller encodes this text the slow way */

/* Chunks are encoded in blocks of up to BLOCK_CHUNKS, in passes, so that the memory loads of
 * different chunks overlap instead of waiting one after another (a cached chunk costs a load
 * from a table bigger than the core's own cache, not work): the first pass splits the block and
 * starts the loads of the front-cache sets, the second takes the front hits and starts the
 * vocabulary's and the piece cache's loads of the others, the third appends every chunk's ids.
 * A chunk's bytes are where the scanner found them, in the text's UTF-8. */
#define BLOCK_CHUNKS 128

typedef struct {
    const uint8_t *p;
    Py_ssize_t n;   /* bytes */
    Py_ssize_t end; /* position in the text after the chunk */
    FrontSlot *front;
    uint64_t w0, w1, h, mixed, seed_slot;
    int32_t ids[FRONT_IDS];
    int nids; /* > 0: the chunk's ids, found before the last pass */
    int seeded; /* a front miss the seed table answers for the vocabulary (see encode_uncached) */
} BlockChunk;

/* Where a part of a long text split for threads (see encode_text_parallel) meets the next one:
 * marks are the first boundaries of the part's own chunking (its start included) and the length
 * of its ids at each; stops are the next part's marks, where this part may end. */
#define SYNC_MARKS 64
typedef struct {
    Py_ssize_t marks[SYNC_MARKS], mark_ids[SYNC_MARKS];
    int nmarks;
    const Py_ssize_t *stops; /* NULL: the last part, which runs to the end of the text */
    int nstops;
    int met; /* index in stops where this part ended, or -1: it ran to the end of the text */
} PartSync;

/* Split the UTF-8 text t[start:] (see utf8_text) with a scanner of _pretokenize.c and append the
 * ids of every chunk to out, with no Python object: it runs without the GIL. Chunks go in blocks
 * (see BLOCK_CHUNKS). With a sync, it records the ids' length at its marks and ends at the first
 * stop it reaches once past them (maybe mid-block: the rest of the block is dropped). 0, or
 * DOC_NO_MEMORY. */
static int encode_range(const ChunkBPE *self, const PretokScanner *scanner, const PretokText *t, Py_ssize_t start,
                        IdBuf *out, PieceCache *cache, PartSync *sync) {
    if (sync) sync->met = -1;
    if (start >= t->n) return 0;
    if (sync) sync->mark_ids[0] = out->len;
    BlockChunk block[BLOCK_CHUNKS];
    Py_ssize_t ends[BLOCK_CHUNKS], i = start;
    const uint8_t *text = t->data, *text_end = text + t->n;
    const FrontSlot *seed = self->seed;
    int stop = 0, count = 0; /* count: chunks encoded */
    for (;;) {
        if (cache && cache->reset_due) pcache_reset(cache);
        if (cache && cache->front_probes >= FRONT_REVIEW_PROBES) front_review(cache);
        int k = (int)chunk_ends(scanner, t, i, ends, BLOCK_CHUNKS);
        /* room for every chunk's ids (no more than its bytes), and the FRONT_IDS a hit copies */
        if (idbuf_reserve(out, ends[k - 1] - i + FRONT_IDS) < 0) return DOC_NO_MEMORY;
        for (int b = 0; b < k; b++) { /* pass 1 */
            BlockChunk *c = &block[b];
            c->p = text + i;
            c->n = ends[b] - i;
            c->end = i = ends[b];
            c->nids = 0;
            c->front = NULL;
            c->seeded = 0;
            if ((cache || seed) && c->n >= 2 && c->n <= FRONT_MAX_PIECE) {
                front_words(c->p, c->n, c->p + 16 <= text_end, &c->w0, &c->w1);
                uint64_t key = front_hash(c->w0, c->w1, c->n);
                c->h = key; /* what a seeded front miss keys the piece cache by (pass 2) */
                if (seed) c->seed_slot = seed_at(self, key);
                if (cache) {
                    c->front = front_at(cache, key);
                    PREFETCH(c->front);
                }
            }
        }
        uint64_t probes = 0, misses = 0;
        for (int b = 0; b < k; b++) { /* pass 2 */
            BlockChunk *c = &block[b];
            if (c->n == 1) {
                c->ids[0] = self->byte_ids[c->p[0]];
                c->nids = 1;
                continue;
            }
            FrontSlot *f = c->front;
            probes += f != NULL;
            if (f && f->w0 == c->w0 && f->w1 == c->w1 && f->len == (uint16_t)c->n) {
                for (int j = 0; j < FRONT_IDS; j++) c->ids[j] = f->ids[j];
                c->nids = f->nids;
                if (c->nids > FRONT_IDS) PREFETCH(cache->arena + c->ids[0]);
                continue;
            }
            if (f && f[1].w0 == c->w0 && f[1].w1 == c->w1 && f[1].len == (uint16_t)c->n) {
                FrontSlot hit = f[1];
                f[1] = f[0]; /* the most recent first */
                f[0] = hit;
                for (int j = 0; j < FRONT_IDS; j++) c->ids[j] = hit.ids[j];
                c->nids = hit.nids;
                if (c->nids > FRONT_IDS) PREFETCH(cache->arena + c->ids[0]);
                continue;
            }
            misses += f != NULL;
            if (seed && c->n >= 2 && c->n <= FRONT_MAX_PIECE) {
                PREFETCH(&seed[c->seed_slot]);
                c->seeded = 1;
            }
            c->mixed = 0;
            if (c->n >= 2 && (self->slots || cache)) {
                /* a short piece that the seed table answers for is looked up in the vocabulary by
                 * no hash of its bytes: its front key serves the piece cache */
                if (!c->seeded) c->h = bytes_hash(c->p, c->n);
                c->mixed = mix64(c->h);
                if (self->slots && !c->seeded) PREFETCH(&self->slots[c->mixed & self->tok_mask]);
                if (cache && c->n <= PCACHE_MAX_PIECE) PREFETCH(&cache->slots[(c->mixed >> 20) & cache->slot_mask]);
            }
        }
        if (cache) {
            cache->front_probes += probes;
            cache->front_misses += misses;
        }
        int32_t *ids = out->ids; /* (a local length and base: out's are not reloaded per chunk) */
        Py_ssize_t len = out->len;
        for (int b = 0; b < k; b++) { /* pass 3 */
            BlockChunk *c = &block[b];
            if (c->nids > FRONT_IDS) { /* (the arena may have moved since pass 2, not emptied) */
                memcpy(ids + len, cache->arena + c->ids[0], (size_t)c->nids * sizeof(int32_t));
                len += c->nids;
            } else if (c->nids > 0) {
                for (int j = 0; j < FRONT_IDS; j++) ids[len + j] = c->ids[j]; /* all FRONT_IDS: no branch on nids */
                len += c->nids;
            } else {
                out->len = len;
                if (encode_uncached(self, c->p, c->n, out, cache, c->front, c->w0, c->w1, c->h, c->mixed,
                                    c->seeded, c->seed_slot, 1) < 0)
                    return DOC_NO_MEMORY;
                ids = out->ids;
                len = out->len;
            }
            if (sync) {
                Py_ssize_t j = c->end;
                if (++count < sync->nmarks) sync->mark_ids[count] = len; /* marks[count] == j */
                if (sync->stops && count >= sync->nmarks - 1) {
                    while (stop < sync->nstops && sync->stops[stop] < j) stop++;
                    if (stop == sync->nstops) sync->stops = NULL; /* no stop left: run to the end */
                    else if (sync->stops[stop] == j) {
                        sync->met = stop;
                        out->len = len;
                        return 0;
                    }
                }
            }
        }
        out->len = len;
        if (i >= t->n) return 0;
    }
}

static const PretokScanner WHOLE_SCANNER;

/* A document, or with WHOLE_SCANNER a piece of encode_pieces. Those pieces are a corpus's distinct
 * chunks (each comes once: SuperBPE's stage 2 and extend), so a piece of several parts is never
 * looked up in the caches whole nor kept there, where it would only push out what repeats: where
 * the kernel splits long pieces (see encode_by_parts), every piece of 2 bytes or more is encoded by
 * its parts (the words of stage 1, which repeat), short ones too; a piece that is one part (one
 * word) goes through the caches as that part. */
static int encode_doc(const ChunkBPE *self, const PretokScanner *scanner, const PretokText *t, IdBuf *out,
                      PieceCache *cache) {
    if (t->n < 0) return DOC_SURROGATE;
    if (scanner == &WHOLE_SCANNER && t->n >= 2 && by_parts(self, FRONT_MAX_PIECE + 1, cache))
        return encode_by_parts(self, t->data, t->n, out, cache) < 0 ? DOC_NO_MEMORY : 0;
    return encode_range(self, scanner, t, 0, out, cache, NULL);
}

/* A long text on several threads. The scanner's chunk at a position depends only on the text
 * from there on (no pattern it knows looks behind), so two chunkings of the same text that share
 * one boundary share every boundary after it. The text is cut into parts at arbitrary positions;
 * each part is chunked and encoded from its start on its own thread (own piece cache), and goes
 * on past its end until it reaches a boundary of the next part's chunking (one of that part's
 * first SYNC_MARKS, found beforehand): from there on the next part's chunks are the true ones, so
 * its ids from that boundary on follow. The first part starts at a true boundary (0), hence every
 * part it hands over to. A part that meets none (e.g. one chunk longer than the next part's
 * marks reach) runs to the end of the text, and the parts after it are dropped. */
#define PARALLEL_PART_MIN ((Py_ssize_t)1 << 18) /* bytes: smaller parts are not worth a thread */

typedef struct {
    const ChunkBPE *self;
    const PretokScanner *scanner;
    const PretokText *t;
    int status, index;
    Py_ssize_t start;
    IdBuf out;
    PartSync sync;
} TextPart;

static void *encode_part(void *arg) {
    TextPart *p = arg;
    int slot = -1;
    PieceCache *cache = pcache_take_from((ChunkBPE *)p->self, p->index, &slot);
    p->status = encode_range(p->self, p->scanner, p->t, p->start, &p->out, cache, &p->sync);
    pcache_give((ChunkBPE *)p->self, slot);
    return NULL;
}

#if (defined(__unix__) || defined(__APPLE__)) && (defined(__GNUC__) || defined(__clang__))
#include <pthread.h>
#define HAVE_THREADS 1
#define ATOMIC_NEXT(p) __atomic_fetch_add(p, 1, __ATOMIC_RELAXED)
#define ATOMIC_GET(p) __atomic_load_n(p, __ATOMIC_RELAXED)
#define ATOMIC_SET(p, v) __atomic_store_n(p, v, __ATOMIC_RELAXED)
#else /* one thread only */
#define HAVE_THREADS 0
#define ATOMIC_NEXT(p) ((*(p))++)
#define ATOMIC_GET(p) (*(p))
#define ATOMIC_SET(p, v) (*(p) = (v))
#endif

/* The ids of t into out (empty) on up to num_threads threads; 0 or a DOC_ status. No GIL needed. */
static int encode_text_parallel(const ChunkBPE *self, const PretokScanner *scanner, const PretokText *t,
                                int num_threads, IdBuf *out) {
    Py_ssize_t count = t->n / PARALLEL_PART_MIN;
    if (count > num_threads) count = num_threads;
    if (!HAVE_THREADS || count < 2) {
        int slot = -1;
        PieceCache *cache = pcache_take((ChunkBPE *)self, &slot);
        int status = encode_doc(self, scanner, t, out, cache);
        pcache_give((ChunkBPE *)self, slot);
        return status;
    }
    TextPart *parts = calloc((size_t)count, sizeof(TextPart));
    if (!parts) return DOC_NO_MEMORY;
    pcache_warm_slots((ChunkBPE *)self, (int)(count < PCACHE_POOL ? count : PCACHE_POOL));
    int status = 0;
    const uint8_t *text = t->data;
    for (Py_ssize_t k = 0; k < count; k++) {
        TextPart *p = &parts[k];
        p->self = self; p->scanner = scanner; p->t = t; p->index = (int)k;
        p->start = t->n / count * k;
        while (p->start < t->n && (text[p->start] & 0xC0) == 0x80) p->start++; /* a character's first byte */
        p->sync.marks[0] = p->start;
        p->sync.nmarks = 1;
        for (Py_ssize_t at = p->start; k > 0 && at < t->n && p->sync.nmarks < SYNC_MARKS;)
            p->sync.marks[p->sync.nmarks++] = at += scanner->chunk(t, at);
    }
    for (Py_ssize_t k = 0; k + 1 < count; k++) {
        parts[k].sync.stops = parts[k + 1].sync.marks;
        parts[k].sync.nstops = parts[k + 1].sync.nmarks;
    }
#if HAVE_THREADS
    pthread_t *threads = calloc((size_t)count, sizeof(pthread_t));
    char *started = calloc((size_t)count, 1);
    if (!threads || !started) status = DOC_NO_MEMORY;
    for (Py_ssize_t k = 1; k < count && !status; k++)
        started[k] = pthread_create(&threads[k], NULL, encode_part, &parts[k]) == 0;
    if (!status) encode_part(&parts[0]);
    for (Py_ssize_t k = 1; k < count && !status; k++) {
        if (started[k]) pthread_join(threads[k], NULL);
        else encode_part(&parts[k]); /* no thread to be had: here, after the others */
    }
    free(threads);
    free(started);
#endif
    Py_ssize_t from = 0;
    for (Py_ssize_t k = 0; k < count && !status; k++) {
        TextPart *p = &parts[k];
        if ((status = p->status) < 0) break;
        Py_ssize_t n = p->out.len - from;
        if (idbuf_reserve(out, n) < 0) { status = DOC_NO_MEMORY; break; }
        memcpy(out->ids + out->len, p->out.ids + from, (size_t)n * sizeof(int32_t));
        out->len += n;
        if (p->sync.met < 0) break; /* it ran to the end of the text */
        from = parts[k + 1].sync.mark_ids[p->sync.met];
    }
    for (Py_ssize_t k = 0; k < count; k++) {
        free(parts[k].out.ids);
    }
    free(parts);
    return status;
}

/* A batch of documents on threads. The work is cut into grains of about BATCH_GRAIN_BYTES of
 * text: runs of whole documents, and parts of a document of BATCH_SPLIT_BYTES or more, which hand
 * over where their chunkings meet as a long text's parts do (see encode_text_parallel). Every
 * thread, the calling one too, takes the next grain (an atomic cursor) and appends its ids to its
 * own buffer with its own piece cache until none is left; the grains are then joined in order.
 * Grains are small and taken as a thread gets free, not shares fixed beforehand, because a thread
 * may be slowed: on a core that another process also runs (one in another session's autogroup
 * takes half of it whatever its nice), a thread does a third of the work of one on a free core.
 * It then takes fewer grains, and the last one it finishes is small, so the others do not wait
 * long for it; a document of megabytes is no one grain either. No GIL needed. */
#define BATCH_GRAIN_BYTES ((Py_ssize_t)1 << 16)
#define BATCH_SPLIT_BYTES (2 * BATCH_GRAIN_BYTES) /* a document this long is cut into parts */
#define BATCH_THREAD_MIN_BYTES ((Py_ssize_t)1 << 15) /* less text than this in all: one thread */
#define BATCH_MAX_THREADS 64

typedef struct {
    Py_ssize_t doc, doc_end; /* docs[doc:doc_end] whole, or a part of docs[doc] (sync set) */
    Py_ssize_t start;        /* a part's first byte in its document */
    PartSync *sync;          /* a part's marks and stops; NULL for whole documents */
    int owner;               /* the thread whose buffer holds its ids, at [at, at + len) */
    Py_ssize_t at, len;
} BatchGrain;

typedef struct {
    const ChunkBPE *self;
    const PretokScanner *scanner;
    const PretokText *docs;
    BatchGrain *grains;
    IdBuf *outs; /* one per thread */
    int64_t *ends; /* a document's end within its grain's buffer until joined */
    signed char *status;
    Py_ssize_t ngrains, next;
    int failed;
} BatchWork;

typedef struct {
    BatchWork *work;
    int index; /* of the thread: its buffer and its preferred piece cache */
} BatchThread;

static void *encode_batch_grains(void *arg) {
    BatchWork *w = ((BatchThread *)arg)->work;
    int index = ((BatchThread *)arg)->index, slot = -1;
    PieceCache *cache = pcache_take_from((ChunkBPE *)w->self, index, &slot);
    IdBuf *out = &w->outs[index];
    for (int failed = 0; !failed;) {
        Py_ssize_t g = ATOMIC_NEXT(&w->next);
        if (g >= w->ngrains || ATOMIC_GET(&w->failed)) break;
        BatchGrain *grain = &w->grains[g];
        grain->owner = index;
        grain->at = out->len;
        if (grain->sync)
            failed = encode_range(w->self, w->scanner, &w->docs[grain->doc], grain->start, out, cache, grain->sync) < 0;
        for (Py_ssize_t d = grain->doc; !grain->sync && !failed && d < grain->doc_end; d++) {
            Py_ssize_t before = out->len;
            w->status[d] = (signed char)encode_doc(w->self, w->scanner, &w->docs[d], out, cache);
            failed = w->status[d] == DOC_NO_MEMORY;
            if (w->status[d] == DOC_SURROGATE) out->len = before;
            w->ends[d] = out->len;
        }
        grain->len = out->len - grain->at;
        if (failed) ATOMIC_SET(&w->failed, 1);
    }
    pcache_give((ChunkBPE *)w->self, slot);
    return NULL;
}

/* The parts of docs[d] (BATCH_SPLIT_BYTES or more) into grains from grains[ng] on and their syncs
 * from syncs[np] on, or only counted when grains is NULL; the number of parts. Each part but the
 * first starts at a character's first byte, past any chunk of more than a grain that covers its
 * start (a run of one letter, of spaces, of digits: the part before encodes it, and the part would
 * only encode its rest again), and with the marks of its first chunks, which the part before
 * stops at. */
static Py_ssize_t batch_parts(const PretokScanner *scanner, const PretokText *t, Py_ssize_t d, BatchGrain *grains,
                              Py_ssize_t ng, PartSync *syncs, Py_ssize_t np) {
    Py_ssize_t nparts = t->n / BATCH_GRAIN_BYTES, made = 0, last = -1;
    for (Py_ssize_t k = 0; k < nparts; k++) {
        Py_ssize_t s = t->n / nparts * k, c = 0;
        while (s < t->n && (((const uint8_t *)t->data)[s] & 0xC0) == 0x80) s++;
        if (s <= last) continue; /* inside the long chunk the part before skipped */
        while (k > 0 && s < t->n && (c = scanner->chunk(t, s)) > BATCH_GRAIN_BYTES) s += c;
        if (s >= t->n) break;
        last = s;
        if (grains) {
            PartSync *sync = &syncs[np + made];
            grains[ng + made] = (BatchGrain){d, d + 1, s, sync, 0, 0, 0};
            sync->marks[0] = s;
            sync->nmarks = 1;
            for (Py_ssize_t at = s; k > 0 && at < t->n && sync->nmarks < SYNC_MARKS;)
                sync->marks[sync->nmarks++] = at += scanner->chunk(t, at);
            sync->stops = NULL; /* the last part runs to the end of the text */
            sync->nstops = 0;
            if (made) {
                syncs[np + made - 1].stops = sync->marks;
                syncs[np + made - 1].nstops = sync->nmarks;
            }
        }
        made++;
    }
    return made;
}

/* The grains of docs[0:count] (see BATCH_GRAIN_BYTES) into grains and syncs, or only counted when
 * grains is NULL (*nparts: how many are parts); long documents are cut into parts when split. */
static Py_ssize_t batch_plan(const PretokScanner *scanner, const PretokText *docs, Py_ssize_t count, int split,
                             BatchGrain *grains, PartSync *syncs, Py_ssize_t *nparts) {
    Py_ssize_t ng = 0, np = 0, first = 0, size = 0;
    for (Py_ssize_t d = 0; d < count; d++) {
        Py_ssize_t n = docs[d].n > 0 ? docs[d].n : 0;
        if (split && n >= BATCH_SPLIT_BYTES) {
            if (d > first) {
                if (grains) grains[ng] = (BatchGrain){first, d, 0, NULL, 0, 0, 0};
                ng++;
            }
            Py_ssize_t made = batch_parts(scanner, &docs[d], d, grains, ng, syncs, np);
            ng += made;
            np += made;
            first = d + 1;
            size = 0;
        } else if ((size += n) >= BATCH_GRAIN_BYTES) {
            if (grains) grains[ng] = (BatchGrain){first, d + 1, 0, NULL, 0, 0, 0};
            ng++;
            first = d + 1;
            size = 0;
        }
    }
    if (count > first) {
        if (grains) grains[ng] = (BatchGrain){first, count, 0, NULL, 0, 0, 0};
        ng++;
    }
    *nparts = np;
    return ng;
}

/* The grains' ids joined in order into out, and every document's end made global; 0, or -1 when
 * out of memory. A document cut into parts takes each part's ids from where the part before
 * handed over (as encode_text_parallel joins them); a part after one that ran to the end of the
 * text is dropped. */
static int batch_join(BatchWork *w, IdBuf *out) {
    Py_ssize_t len = 0, from = 0;
    for (Py_ssize_t g = 0; g < w->ngrains; g++) len += w->grains[g].len;
    if (idbuf_reserve(out, len + 1) < 0) return -1;
    int live = 1; /* the current document's parts are still taken */
    for (Py_ssize_t g = 0; g < w->ngrains; g++) {
        BatchGrain *grain = &w->grains[g];
        const int32_t *ids = w->outs[grain->owner].ids + grain->at;
        if (!grain->sync) {
            if (grain->len) memcpy(out->ids + out->len, ids, (size_t)grain->len * sizeof(int32_t));
            for (Py_ssize_t d = grain->doc; d < grain->doc_end; d++) w->ends[d] += out->len - grain->at;
            out->len += grain->len;
            continue;
        }
        if (grain->start == 0) live = 1, from = 0; /* a document's first part */
        if (!live) continue;
        if (grain->len > from) memcpy(out->ids + out->len, ids + from, (size_t)(grain->len - from) * sizeof(int32_t));
        out->len += grain->len - from;
        w->ends[grain->doc] = out->len;
        if (grain->sync->met < 0) live = 0; /* it ran to the end of the text */
        else from = w->grains[g + 1].sync->mark_ids[grain->sync->met] - w->grains[g + 1].at;
    }
    return 0;
}

/* How encode_docs runs docs[0:count] on up to *num_threads threads: the threads it uses (one for
 * less than BATCH_THREAD_MIN_BYTES of text, never more than grains) into *num_threads, whether long
 * documents are cut into parts into *split, and the number of grains (1 on one thread; *nparts
 * of them are parts). */
static Py_ssize_t batch_setup(const PretokScanner *scanner, const PretokText *docs, Py_ssize_t count, int *num_threads,
                              int *split, Py_ssize_t *nparts) {
    Py_ssize_t total = 0, ngrains = 1;
    for (Py_ssize_t d = 0; d < count; d++) total += docs[d].n > 0 ? docs[d].n : 0;
    if (!HAVE_THREADS || *num_threads < 1 || total < BATCH_THREAD_MIN_BYTES) *num_threads = 1;
    if (*num_threads > BATCH_MAX_THREADS) *num_threads = BATCH_MAX_THREADS;
    *split = *num_threads > 1 && scanner != &WHOLE_SCANNER;
    *nparts = 0;
    if (*num_threads > 1) ngrains = batch_plan(scanner, docs, count, *split, NULL, NULL, nparts);
    if (*num_threads > ngrains) *num_threads = (int)ngrains;
    return ngrains;
}

/* Encode docs[0:count] into out (empty, maybe with room already), the end of each document's ids
 * in ends and its DOC_ status in status, on up to num_threads threads; 0, or -1 when out of
 * memory. No GIL needed. */
static int encode_docs(const ChunkBPE *self, const PretokScanner *scanner, const PretokText *docs, Py_ssize_t count,
                       int num_threads, IdBuf *out, int64_t *ends, signed char *status) {
    int split, failed = 0;
    Py_ssize_t nparts = 0, ngrains = batch_setup(scanner, docs, count, &num_threads, &split, &nparts);
    if (num_threads <= 1) { /* in this thread, straight into out */
        int slot = -1;
        PieceCache *cache = pcache_take((ChunkBPE *)self, &slot);
        for (Py_ssize_t d = 0; d < count && !failed; d++) {
            Py_ssize_t before = out->len;
            status[d] = (signed char)encode_doc(self, scanner, &docs[d], out, cache);
            failed = status[d] == DOC_NO_MEMORY;
            if (status[d] == DOC_SURROGATE) out->len = before;
            ends[d] = out->len;
        }
        pcache_give((ChunkBPE *)self, slot);
        return failed ? -1 : 0;
    }
    BatchGrain *grains = malloc((size_t)ngrains * sizeof(BatchGrain));
    PartSync *syncs = nparts ? malloc((size_t)nparts * sizeof(PartSync)) : NULL;
    IdBuf *outs = calloc((size_t)num_threads, sizeof(IdBuf));
    failed = !grains || (nparts && !syncs) || !outs;
    if (!failed) {
        batch_plan(scanner, docs, count, split, grains, syncs, &nparts);
        for (Py_ssize_t g = 0; g < ngrains; g++)
            if (grains[g].sync) status[grains[g].doc] = 0;
        BatchWork work = {self, scanner, docs, grains, outs, ends, status, ngrains, 0, 0};
        pcache_warm_slots((ChunkBPE *)self, num_threads);
        BatchThread args[BATCH_MAX_THREADS];
        for (int k = 0; k < num_threads; k++) args[k] = (BatchThread){&work, k};
#if HAVE_THREADS
        pthread_t threads[BATCH_MAX_THREADS];
        int started = 0;
        for (int k = 1; k < num_threads; k++)
            if (pthread_create(&threads[started], NULL, encode_batch_grains, &args[k]) == 0) started++;
#endif
        encode_batch_grains(&args[0]); /* the calling thread works too: it stops when no grain is left */
#if HAVE_THREADS
        for (int k = 0; k < started; k++) pthread_join(threads[k], NULL);
#endif
        failed = work.failed || batch_join(&work, out) < 0;
    }
    for (int k = 0; outs && k < num_threads; k++) free(outs[k].ids);
    free(outs);
    free(syncs);
    free(grains);
    return failed ? -1 : 0;
}

static const PretokScanner *get_scanner(PyObject *capsule) {
    const PretokScanner *scanner = PyCapsule_GetPointer(capsule, PRETOK_CAPSULE_NAME);
    if (scanner && *scanner->classes == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_pretokenize.set_classes() must be called first");
        return NULL;
    }
    return scanner;
}

#define GIL_HOLD_BYTES 2048 /* a text shorter than this is encoded holding the GIL: releasing it costs more */

/* encode_text_parallel, called holding the GIL: it is released for a text of GIL_HOLD_BYTES or more. */
static int encode_text_unlocked(const ChunkBPE *self, const PretokScanner *scanner, const PretokText *t,
                                int num_threads, IdBuf *out) {
    if (t->n < GIL_HOLD_BYTES) return encode_text_parallel(self, scanner, t, num_threads, out);
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = encode_text_parallel(self, scanner, t, num_threads, out);
    Py_END_ALLOW_THREADS
    return status;
}

/* The UTF-8 of the str text as a PretokText: 0; 1 when text has a lone surrogate (no UTF-8: the
 * caller encodes it the slow way, see DOC_SURROGATE); -1 with an error. CPython keeps the UTF-8
 * of a non-ASCII str once made (an ASCII str's data is its UTF-8), so a text encoded again is not
 * converted again: tiktoken and the other encoders read a str the same way. Needs the GIL; the
 * bytes live as long as the str. */
static int utf8_text(PyObject *text, PretokText *t) {
    t->kind = PRETOK_UTF8_KIND;
    if ((t->data = PyUnicode_AsUTF8AndSize(text, &t->n))) return 0;
    if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return -1;
    PyErr_Clear();
    t->n = -1;
    return 1;
}

/* utf8_text of each item of a list, refusing one that is not a str: the bytes of those with
   UTF-8 (a lone surrogate has none), or -1 with an exception. */
static Py_ssize_t utf8_texts(PyObject *list, Py_ssize_t count, PretokText *docs) {
    Py_ssize_t bytes = 0;
    for (Py_ssize_t d = 0; d < count; d++) {
        PyObject *text = PyList_GET_ITEM(list, d);
        if (!PyUnicode_Check(text)) {
            PyErr_Format(PyExc_TypeError, "texts[%zd] is %.100s, not str", d, Py_TYPE(text)->tp_name);
            return -1;
        }
        if (utf8_text(text, &docs[d]) < 0) return -1;
        bytes += docs[d].n > 0 ? docs[d].n : 0;
    }
    return bytes;
}

static PyObject *id_array_take(IdBuf *buf);

/* encode_text(text, scanner, num_threads=1) and encode_text_array(...): the ids of a whole text as
 * a list (as_array: an IdArray), or None for a lone surrogate; a text of 2 * PARALLEL_PART_MIN
 * bytes of UTF-8 or more is cut into up to num_threads parts. (Called once per document: its
 * arguments are read without building a tuple.) */
static PyObject *encode_whole_text(ChunkBPE *self, PyObject *const *args, Py_ssize_t nargs, int as_array) {
    const char *name = as_array ? "encode_text_array" : "encode_text";
    if (nargs < 2 || nargs > 3) {
        PyErr_Format(PyExc_TypeError, "%s(text, scanner, num_threads=1) takes 2 or 3 arguments, not %zd", name, nargs);
        return NULL;
    }
    PyObject *text = args[0];
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "%s: text must be str, not %.100s", name, Py_TYPE(text)->tp_name);
        return NULL;
    }
    int num_threads = 1;
    if (nargs == 3) {
        long v = PyLong_AsLong(args[2]);
        if (v == -1 && PyErr_Occurred()) return NULL;
        num_threads = v < 1 ? 1 : v > INT_MAX ? INT_MAX : (int)v;
    }
    const PretokScanner *scanner = get_scanner(args[1]);
    if (!scanner) return NULL;
    if (seed_build(self) < 0) return PyErr_NoMemory();
    PretokText t;
    int surrogate = utf8_text(text, &t);
    if (surrogate) return surrogate < 0 ? NULL : Py_NewRef(Py_None);
    IdBuf out = {NULL, 0, 0};
    /* ids are fewer than bytes, about a third of them in mixed text (more are made room for as needed) */
    if (idbuf_reserve_for_call(&out, ids_estimate(self, t.n)) < 0) return PyErr_NoMemory();
    int status = encode_text_unlocked(self, scanner, &t, num_threads, &out);
    PyObject *result;
    if (status == 0) ids_learn(self, t.n, out.len);
    if (status == DOC_NO_MEMORY) result = PyErr_NoMemory();
    else if (status == DOC_SURROGATE) result = Py_NewRef(Py_None);
    else result = as_array ? id_array_take(&out) : ids_to_list(self, out.ids, out.len);
    ids_release(out.ids, out.cap);
    return result;
}

static PyObject *ChunkBPE_encode_text(ChunkBPE *self, PyObject *const *args, Py_ssize_t nargs) {
    return encode_whole_text(self, args, nargs, 0);
}

static PyObject *ChunkBPE_encode_text_array(ChunkBPE *self, PyObject *const *args, Py_ssize_t nargs) {
    return encode_whole_text(self, args, nargs, 1);
}

/* The lists of ids of count texts (text d has ids[ends[d - 1] : ends[d]], None where status[d] is
 * DOC_SURROGATE) for a large batch, with most of the work done without the GIL so that another
 * thread's call encodes meanwhile: the lists are allocated (untracked by the collector) under the
 * GIL, filled with the kernel's int objects without it while the references taken are only
 * counted per id, and the counts are added to the objects' reference counts under the GIL again.
 * This is safe because the lists are reachable by nobody else until returned and id_objects
 * holds a reference to every int object, so none can be freed meanwhile. NULL with an error, or
 * NULL without one when an id has no int object (the caller then builds the lists one by one). */
static PyObject *ids_to_lists_unlocked(ChunkBPE *self, const int32_t *ids, const int64_t *ends,
                                       const signed char *status, Py_ssize_t count) {
    Py_ssize_t n_objects = self->id_objects_len, total = count ? ends[count - 1] : 0;
    if (!self->id_objects && n_objects > 0) self->id_objects = calloc((size_t)n_objects, sizeof(PyObject *));
    PyObject **objects = self->id_objects;
    if (!objects) return NULL;
    for (Py_ssize_t i = 0; i < n_objects; i++)
        if (!objects[i] && !(objects[i] = PyLong_FromSsize_t(i))) return NULL;
    uint32_t *refs = calloc((size_t)n_objects, sizeof(uint32_t));
    PyObject *result = PyList_New(count);
    if (!refs || !result) { free(refs); Py_XDECREF(result); if (!PyErr_Occurred()) PyErr_NoMemory(); return NULL; }
    for (Py_ssize_t d = 0; d < count; d++) {
        PyObject *list = status[d] == DOC_SURROGATE ? Py_NewRef(Py_None) : PyList_New(ends[d] - (d ? ends[d - 1] : 0));
        if (!list) { free(refs); Py_DECREF(result); return NULL; }
        if (PyList_Check(list)) PyObject_GC_UnTrack(list);
        PyList_SET_ITEM(result, d, list);
    }
    unsigned bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < total; i++) bad |= (uint32_t)ids[i] >= (uint64_t)n_objects; /* (vector code) */
    for (Py_ssize_t d = 0; d < count && !bad; d++) {
        PyObject *list = PyList_GET_ITEM(result, d);
        if (list == Py_None) continue;
        PyObject **items = ((PyListObject *)list)->ob_item;
        for (Py_ssize_t i = d ? ends[d - 1] : 0, k = 0; i < ends[d]; i++, k++) {
            items[k] = objects[ids[i]];
            refs[ids[i]]++;
        }
    }
    Py_END_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n_objects; i++)
        if (refs[i]) Py_SET_REFCNT(objects[i], Py_REFCNT(objects[i]) + refs[i]);
    free(refs);
    for (Py_ssize_t d = 0; d < count; d++) {
        PyObject *list = PyList_GET_ITEM(result, d);
        if (list != Py_None) PyObject_GC_Track(list);
    }
    if (bad) { Py_DECREF(result); return NULL; } /* no item was set: the lists are empty of references */
    return result;
}

/* The ids of a call as a writable buffer of uint32 that owns them: numpy takes it as an array
 * without copying (bytes would be copied in, then out again since numpy cannot write to them). */
typedef struct {
    PyObject_HEAD
    int32_t *ids;
    Py_ssize_t len, cap;
    Py_ssize_t shape;
} IdArray;

static int IdArray_getbuffer(IdArray *self, Py_buffer *view, int flags) {
    int ok = PyBuffer_FillInfo(view, (PyObject *)self, self->ids, self->len * (Py_ssize_t)sizeof(int32_t), 0, flags);
    if (ok == 0 && (flags & PyBUF_ND) == PyBUF_ND) { /* as uint32 items; else bytes */
        if ((flags & PyBUF_FORMAT) == PyBUF_FORMAT) view->format = "I";
        self->shape = self->len;
        view->itemsize = sizeof(int32_t);
        view->ndim = 1;
        view->shape = &self->shape;
    }
    return ok;
}

static void IdArray_dealloc(IdArray *self) {
    ids_release(self->ids, self->cap);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyBufferProcs IdArray_as_buffer = {(getbufferproc)IdArray_getbuffer, NULL};

static PyTypeObject IdArrayType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hf_bbpe._chunk_bpe.IdArray",
    .tp_basicsize = sizeof(IdArray),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The ids of an encode_texts call: a writable buffer of uint32.",
    .tp_dealloc = (destructor)IdArray_dealloc,
    .tp_as_buffer = &IdArray_as_buffer,
};

/* An IdArray that takes buf's ids (buf is left empty), or NULL with an error. A buffer with a
 * quarter or more of it unused is shrunk to its length first (so that a kept array holds little
 * more memory than its ids; a fuller one is kept as it is, for the spare buffer). */
static PyObject *id_array_take(IdBuf *buf) {
    IdArray *a = PyObject_New(IdArray, &IdArrayType);
    if (!a) return NULL;
    int shrink = buf->len < buf->cap - buf->cap / 4;
    int32_t *ids = shrink ? realloc(buf->ids, (size_t)(buf->len ? buf->len : 1) * sizeof(int32_t)) : NULL;
    a->ids = ids ? ids : buf->ids;
    a->cap = ids ? (buf->len ? buf->len : 1) : buf->cap;
    a->len = buf->len;
    a->shape = buf->len;
    buf->ids = NULL;
    buf->len = buf->cap = 0;
    return (PyObject *)a;
}

/* encode_texts(texts, scanner, as_lists, num_threads=1): encode a list of str in one call without
 * the GIL, on up to num_threads threads (encode_docs).
 * as_lists: a list with the list of ids of each text (None for a text with a lone surrogate);
 * otherwise (ids as a writable uint32 buffer, end offset of each text's ids as int64 bytes, [indices of
 * texts with a lone surrogate, which have no ids]). */
static PyObject *ChunkBPE_encode_texts(ChunkBPE *self, PyObject *args) {
    PyObject *texts, *capsule;
    int as_lists, num_threads = 1;
    if (!PyArg_ParseTuple(args, "O!Op|i", &PyList_Type, &texts, &capsule, &as_lists, &num_threads)) return NULL;
    const PretokScanner *scanner = get_scanner(capsule);
    if (!scanner) return NULL;
    if (seed_build(self) < 0) return PyErr_NoMemory();
    Py_ssize_t count = PyList_GET_SIZE(texts);
    PretokText *docs = malloc((size_t)(count + 1) * sizeof(PretokText));
    int64_t *ends = malloc((size_t)(count + 1) * sizeof(int64_t));
    signed char *status = malloc((size_t)(count + 1));
    PyObject *result = NULL, *held = PyList_GetSlice(texts, 0, count); /* keeps every str alive */
    IdBuf out = {NULL, 0, 0};
    if (!docs || !ends || !status || !held) { if (held) PyErr_NoMemory(); goto done; }
    Py_ssize_t bytes = utf8_texts(held, count, docs);
    if (bytes < 0) goto done;
    int failed = idbuf_reserve_for_call(&out, ids_estimate(self, bytes)) < 0;
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    if (bytes < GIL_HOLD_BYTES) {
        failed = encode_docs(self, scanner, docs, count, num_threads, &out, ends, status) < 0;
    } else {
        Py_BEGIN_ALLOW_THREADS
        failed = encode_docs(self, scanner, docs, count, num_threads, &out, ends, status) < 0;
        Py_END_ALLOW_THREADS
    }
    if (failed) { PyErr_NoMemory(); goto done; }
    ids_learn(self, bytes, out.len);
    if (as_lists && out.len >= LISTS_UNLOCKED_MIN_IDS &&
        ((result = ids_to_lists_unlocked(self, out.ids, ends, status, count)) || PyErr_Occurred()))
        goto done;
    if (as_lists) {
        if (!(result = PyList_New(count))) goto done;
        for (Py_ssize_t d = 0; d < count; d++) {
            Py_ssize_t begin = d ? ends[d - 1] : 0;
            PyObject *ids = status[d] == DOC_SURROGATE ? Py_NewRef(Py_None) : ids_to_list(self, out.ids + begin, ends[d] - begin);
            if (!ids) { Py_CLEAR(result); goto done; }
            PyList_SET_ITEM(result, d, ids);
        }
    } else {
        PyObject *flat = id_array_take(&out);
        PyObject *offsets = PyBytes_FromStringAndSize((const char *)ends, count * (Py_ssize_t)sizeof(int64_t));
        PyObject *bad = PyList_New(0);
        for (Py_ssize_t d = 0; bad && d < count; d++) {
            if (status[d] != DOC_SURROGATE) continue;
            PyObject *index = PyLong_FromSsize_t(d);
            if (!index || PyList_Append(bad, index) < 0) Py_CLEAR(bad);
            Py_XDECREF(index);
        }
        if (flat && offsets && bad) result = PyTuple_Pack(3, flat, offsets, bad);
        Py_XDECREF(flat); Py_XDECREF(offsets); Py_XDECREF(bad);
    }
done:
    Py_XDECREF(held);
    free(docs); free(ends); free(status);
    ids_release(out.ids, out.cap);
    return result;
}

static void free_tables(ChunkBPE *self) {
    free(self->pairs); free(self->pair_filter); free(self->byte_pairs);
    free(self->tok_buf); free(self->toks); free(self->tok_hash);
    if (self->slots) table_free(self->slots, (self->tok_mask + 1) * sizeof(Slot));
    free(self->powers); free(self->index_of); free(self->tok_len); free(self->tok_left); free(self->tok_right);
    self->tok_len = self->tok_left = self->tok_right = NULL;
    self->part_scanner = NULL;
    if (self->seed) table_free(self->seed, (self->seed_mask + 1) * sizeof(FrontSlot));
    self->seed = NULL;
    for (int k = 0; k < PCACHE_POOL; k++) { pcache_free(self->pcache[k]); self->pcache[k] = NULL; }
    if (self->id_objects) {
        for (Py_ssize_t i = 0; i < self->id_objects_len; i++) Py_XDECREF(self->id_objects[i]);
        free(self->id_objects);
    }
    free(self->id_refs);
    self->id_refs = NULL;
    self->id_objects = NULL;
    self->id_objects_len = 0;
    self->max_id = -1;
    self->pairs = NULL; self->pair_filter = NULL; self->byte_pairs = NULL; self->tok_buf = NULL; self->toks = NULL; self->tok_hash = NULL; self->slots = NULL; self->powers = NULL; self->index_of = NULL;
}

/* The vocabulary (one byte buffer cut by int64 lengths, with int64 ids) as a byte-string hash
 * table; a byte string listed twice is found as its lowest id. Returns 0, or -1 with an error. */
static int build_token_table(ChunkBPE *self, PyObject *tokens) {
    Py_buffer bbuf, blen, bids;
    if (!PyArg_ParseTuple(tokens, "y*y*y*", &bbuf, &blen, &bids)) return -1;
    Py_ssize_t count = blen.len / (Py_ssize_t)sizeof(int64_t);
    const int64_t *lengths = blen.buf, *idv = bids.buf;
    int ok = -1;
    if (bids.len != blen.len || count >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "tokens: lengths and ids differ in size");
        goto done;
    }
    if (bbuf.len >= UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "tokens: more than 4 GB of token bytes");
        goto done;
    }
    uint64_t cap = 16;
    while (cap < (uint64_t)count * 2 + 2) cap <<= 1;
    self->tok_buf = malloc((size_t)bbuf.len + 1);
    self->toks = malloc((size_t)(count + 1) * sizeof(TokInfo));
    self->tok_hash = malloc((size_t)(count + 1) * sizeof(uint64_t));
    self->slots = table_alloc(cap * sizeof(Slot));
    self->tok_mask = cap - 1; /* (the slots' size, for table_free) */
    if (!self->tok_buf || !self->toks || !self->tok_hash || !self->slots) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(self->tok_buf, bbuf.buf, (size_t)bbuf.len);
    self->tok_count = count;
    for (uint64_t j = 0; j < cap; j++) self->slots[j].tok = -1;
    self->max_len = 1;
    self->max_id = -1;
    self->dup_first = self->dup_second = -1;
    int64_t at = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (lengths[i] < 0 || at + lengths[i] > bbuf.len || lengths[i] >= INT32_MAX || idv[i] < 0 || idv[i] > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "tokens: a length or an id is out of range");
            goto done;
        }
        const uint8_t *p = self->tok_buf + at;
        Py_ssize_t n = (Py_ssize_t)lengths[i];
        self->toks[i].start = (uint32_t)at;
        self->toks[i].len = (int32_t)n;
        self->toks[i].id = (int32_t)idv[i];
        self->tok_hash[i] = bytes_hash(p, n);
        if (n > self->max_len) self->max_len = (int32_t)n;
        if (idv[i] > self->max_id) self->max_id = idv[i];
        uint64_t m = mix64(self->tok_hash[i]), j = m & self->tok_mask;
        for (;;) {
            Slot *s = &self->slots[j];
            if (s->tok < 0) { s->tok = (int32_t)i; s->tag = (uint32_t)(m >> 32); break; }
            if (self->toks[s->tok].len == n && memcmp(self->tok_buf + self->toks[s->tok].start, p, (size_t)n) == 0) {
                if (self->dup_first < 0) { self->dup_first = self->toks[s->tok].id; self->dup_second = self->toks[i].id; }
                if (self->toks[i].id < self->toks[s->tok].id) s->tok = (int32_t)i;
                break;
            }
            j = (j + 1) & self->tok_mask;
        }
        at += n;
    }
    self->powers = malloc((size_t)(self->max_len + 1) * sizeof(uint64_t));
    self->index_of = malloc((size_t)(self->max_id + 2) * sizeof(int32_t));
    if (!self->powers || !self->index_of) { PyErr_NoMemory(); goto done; }
    self->powers[0] = 1;
    for (int32_t k = 1; k <= self->max_len; k++) self->powers[k] = self->powers[k - 1] * HASH_BASE;
    memset(self->index_of, 0xff, (size_t)(self->max_id + 2) * sizeof(int32_t));
    for (Py_ssize_t i = count - 1; i >= 0; i--) self->index_of[self->toks[i].id] = (int32_t)i;
    ok = 0;
done:
    PyBuffer_Release(&bbuf); PyBuffer_Release(&blen); PyBuffer_Release(&bids);
    return ok;
}

/* "ranks" mode without duplicate tokens: the pair table of every split of every token into two
 * tokens (found in one pass, kept in a list, then put in a table of the right size; a split's
 * two parts are looked up by their hashes, the prefix's and suffix's each made in one pass over
 * the token). tok_hash and powers, which only rank_of_bytes needs, are freed. Returns 0, or -1
 * when out of memory. */
static int build_rank_pairs(ChunkBPE *self) {
    size_t count = 0, cap = 1 << 16;
    uint32_t *found = malloc(cap * 3 * sizeof(uint32_t)); /* (left id, right id, merged id) */
    uint64_t *suffix = malloc(((size_t)self->max_len + 1) * sizeof(uint64_t));
    int ok = found && suffix ? 0 : -1;
    for (Py_ssize_t t = 0; ok == 0 && t < self->tok_count; t++) {
        if (self->toks[t].id == self->unmergeable) continue;
        const uint8_t *p = self->tok_buf + self->toks[t].start;
        int32_t n = self->toks[t].len;
        suffix[n] = 0; /* suffix[k]: bytes_hash(p + k, n - k) */
        for (int32_t k = n - 1; k >= 1; k--) suffix[k] = (uint64_t)(p[k] + 1) + HASH_BASE * suffix[k + 1];
        uint64_t h = 0, power = 1;
        for (int32_t k = 1; k < n; k++) {
            h += (uint64_t)(p[k - 1] + 1) * power;
            power *= HASH_BASE;
            int64_t left = token_lookup(self, h, p, k);
            if (left < 0) continue;
            int64_t right = token_lookup(self, suffix[k], p + k, n - k);
            if (right < 0) continue;
            if (count == cap) {
                uint32_t *more = realloc(found, cap * 2 * 3 * sizeof(uint32_t));
                if (!more) { ok = -1; break; }
                found = more;
                cap *= 2;
            }
            uint32_t *f = found + 3 * count++;
            f[0] = (uint32_t)self->toks[left].id;
            f[1] = (uint32_t)self->toks[right].id;
            f[2] = (uint32_t)self->toks[t].id;
        }
    }
    if (ok == 0) ok = pairs_alloc(self, count, self->max_id);
    for (size_t i = 0; ok == 0 && i < count; i++) pairs_put(self, found[3 * i], found[3 * i + 1], (int32_t)found[3 * i + 2]);
    free(found); free(suffix);
    free(self->tok_hash); free(self->powers);
    self->tok_hash = NULL; self->powers = NULL;
    return ok;
}

/* The largest id in the merges dict ({(a, b): merged}), or -1 if some entry is not three ints
 * (the loop that fills the pair table reports it). */
static int64_t merges_max_id(PyObject *merges) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    long long top = -1;
    while (PyDict_Next(merges, &pos, &key, &value)) {
        if (!PyTuple_Check(key) || PyTuple_GET_SIZE(key) != 2) return -1;
        long long v[3] = {PyLong_AsLongLong(PyTuple_GET_ITEM(key, 0)), PyLong_AsLongLong(PyTuple_GET_ITEM(key, 1)),
                          PyLong_AsLongLong(value)};
        if (PyErr_Occurred()) { PyErr_Clear(); return -1; }
        for (int k = 0; k < 3; k++) {
            if (v[k] < 0) return -1;
            if (v[k] > top) top = v[k];
        }
    }
    return top;
}

/* "merges" mode: tok_len, tok_left and tok_right of every byte and every token a merge makes
 * (merges taken in the order of the ids they make, so that their parts come first); left NULL
 * when a merge names a token that is neither (a token no merge builds) or ids are too large for
 * dense tables. 0, or -1 when out of memory. */
#define TOK_LEN_MAX_ID ((int64_t)1 << 24)
typedef struct { int32_t a, b, made; } MergeTriple;
static int triple_cmp(const void *x, const void *y) {
    int32_t p = ((const MergeTriple *)x)->made, q = ((const MergeTriple *)y)->made;
    return (p > q) - (p < q);
}

static int build_tok_len(ChunkBPE *self, PyObject *merges, int64_t max_id) {
    for (int b = 0; b < 256; b++)
        if (self->byte_ids[b] > max_id) max_id = self->byte_ids[b];
    if (max_id < 0 || max_id >= TOK_LEN_MAX_ID) return 0;
    Py_ssize_t count = PyDict_Size(merges), k = 0;
    MergeTriple *triples = malloc(((size_t)count + 1) * sizeof(MergeTriple));
    int32_t *len = calloc((size_t)max_id + 1, sizeof(int32_t));
    int32_t *left = malloc(((size_t)max_id + 1) * sizeof(int32_t)), *right = malloc(((size_t)max_id + 1) * sizeof(int32_t));
    if (!triples || !len || !left || !right) { free(triples); free(len); free(left); free(right); return -1; }
    memset(left, 0xff, ((size_t)max_id + 1) * sizeof(int32_t));
    memset(right, 0xff, ((size_t)max_id + 1) * sizeof(int32_t));
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(merges, &pos, &key, &value) && k < count) {
        triples[k].a = (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(key, 0));
        triples[k].b = (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(key, 1));
        triples[k++].made = (int32_t)PyLong_AsLong(value);
    }
    qsort(triples, (size_t)k, sizeof(MergeTriple), triple_cmp);
    for (int b = 0; b < 256; b++)
        if (self->byte_ids[b] >= 0) len[self->byte_ids[b]] = 1;
    int known = 1;
    for (Py_ssize_t i = 0; i < k && known; i++) {
        const MergeTriple *m = &triples[i];
        known = len[m->a] > 0 && len[m->b] > 0 && len[m->a] < INT32_MAX - len[m->b];
        if (known) len[m->made] = len[m->a] + len[m->b];
        left[m->made] = m->a;
        right[m->made] = m->b;
    }
    free(triples);
    if (!known) { free(len); free(left); free(right); return 0; }
    self->tok_left = left;
    self->tok_right = right;
    self->tok_len = len;
    return 0;
}

static int ChunkBPE_init(ChunkBPE *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"merges", "byte_ids", "cache_max", "tokens", "rank_mode", "unmergeable", NULL};
    PyObject *merges, *byte_ids, *tokens = Py_None;
    Py_ssize_t cache_max = 1 << 18;
    int rank_mode = 0;
    long long unmergeable = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O|nOpL", kwlist, &PyDict_Type, &merges, &byte_ids, &cache_max,
                                     &tokens, &rank_mode, &unmergeable))
        return -1;
    free_tables(self);
    self->rank_mode = 0;
    self->unmergeable = unmergeable;
    self->ids_per_kb = 1024 / 3;
    PyObject *seq = PySequence_Fast(byte_ids, "byte_ids must be a sequence of 256 ints");
    if (!seq) return -1;
    if (PySequence_Fast_GET_SIZE(seq) != 256) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "byte_ids must have 256 entries");
        return -1;
    }
    for (int b = 0; b < 256; b++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, b));
        if (v == -1 && PyErr_Occurred()) { Py_DECREF(seq); return -1; }
        self->byte_ids[b] = (int32_t)v;
    }
    Py_DECREF(seq);
    if (tokens != Py_None && build_token_table(self, tokens) < 0) { free_tables(self); return -1; }
    if (rank_mode && tokens == Py_None) {
        PyErr_SetString(PyExc_ValueError, "rank_mode needs the tokens");
        return -1;
    }
    self->rank_mode = rank_mode;
    int64_t max_id = rank_mode ? 0 : merges_max_id(merges);
    if (rank_mode) {
        if (self->dup_first < 0 && build_rank_pairs(self) < 0) { free_tables(self); PyErr_NoMemory(); return -1; }
    } else if (pairs_alloc(self, (uint64_t)PyDict_Size(merges), max_id) < 0) {
        free_tables(self);
        PyErr_NoMemory();
        return -1;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (!rank_mode && PyDict_Next(merges, &pos, &key, &value)) {
        long a, b, r;
        if (!PyTuple_Check(key) || PyTuple_GET_SIZE(key) != 2) {
            PyErr_SetString(PyExc_TypeError, "merges keys must be (int, int) tuples");
            free_tables(self);
            return -1;
        }
        a = PyLong_AsLong(PyTuple_GET_ITEM(key, 0));
        b = PyLong_AsLong(PyTuple_GET_ITEM(key, 1));
        r = PyLong_AsLong(value);
        if (PyErr_Occurred()) { free_tables(self); return -1; }
        if (a < 0 || b < 0 || r < 0 || a > INT32_MAX || b > INT32_MAX || r > INT32_MAX) {
            PyErr_Format(PyExc_ValueError, "merge (%ld, %ld) -> %ld: ids must be in 0 .. 2**31 - 1", a, b, r);
            free_tables(self);
            return -1;
        }
        pairs_put(self, (uint32_t)a, (uint32_t)b, (int32_t)r);
        if (r >= self->id_objects_len) self->id_objects_len = r + 1;
    }
    if (!rank_mode && tokens == Py_None && build_tok_len(self, merges, max_id) < 0) {
        free_tables(self);
        PyErr_NoMemory();
        return -1;
    }
    if (self->max_id >= self->id_objects_len) self->id_objects_len = (Py_ssize_t)self->max_id + 1;
    for (int b = 0; b < 256; b++)
        if (self->byte_ids[b] >= self->id_objects_len) self->id_objects_len = self->byte_ids[b] + 1;
    if (self->id_objects_len > ((Py_ssize_t)1 << 22)) self->id_objects_len = (Py_ssize_t)1 << 22;
    self->byte_pairs = malloc(65536 * sizeof(uint32_t));
    if (!self->byte_pairs) { free_tables(self); PyErr_NoMemory(); return -1; }
    for (int x = 0; x < 256; x++)
        for (int y = 0; y < 256; y++) self->byte_pairs[(x << 8) | y] = (uint32_t)rank_of(self, self->byte_ids[x], self->byte_ids[y]);
    self->cache_max = cache_max;
#if defined(__GLIBC__)
    /* Loading a large vocabulary leaves freed scratch (the importer's arrays) in the heap; give
     * it back to the system, so that a loaded tokenizer costs only what it keeps. */
    if (self->tok_count >= 10000 || PyDict_Size(merges) >= 10000) malloc_trim(0);
#endif
    return 0;
}

static void ChunkBPE_dealloc(ChunkBPE *self) {
    free_tables(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *ChunkBPE_encode_bytes(ChunkBPE *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *out = encode_raw(self, view.buf, view.len);
    PyBuffer_Release(&view);
    return out;
}

/* Chunks given as strs (a split that no C scanner knows: the regex module's findall, a
 * pre-tokenizer pipeline) take the same blocks and caches as a scanned text: their UTF-8 is
 * joined in one buffer, and LIST_SCANNER hands encode_range the chunks' ends in it. */
typedef struct {
    PretokText text;        /* first: LIST_SCANNER's functions are given a pointer to it */
    const Py_ssize_t *ends; /* where each chunk ends in text: increasing, the last is text.n */
    Py_ssize_t count;
} ChunkList;

/* The index of the chunk of list that starts at i (0, or one of the ends). */
static Py_ssize_t list_index(const ChunkList *list, Py_ssize_t i) {
    Py_ssize_t lo = 0, hi = list->count;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (list->ends[mid] > i) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

static Py_ssize_t list_chunk(const PretokText *t, Py_ssize_t i) {
    const ChunkList *list = (const ChunkList *)t;
    return list->ends[list_index(list, i)] - i;
}

static Py_ssize_t list_chunks(const PretokText *t, Py_ssize_t i, Py_ssize_t *ends, Py_ssize_t max) {
    const ChunkList *list = (const ChunkList *)t;
    Py_ssize_t k = list_index(list, i), m = list->count - k < max ? list->count - k : max;
    memcpy(ends, list->ends + k, (size_t)m * sizeof(Py_ssize_t));
    return m;
}

static uint8_t *const NO_CLASSES = NULL;
static const PretokScanner LIST_SCANNER = {list_chunk, &NO_CLASSES, list_chunks};

/* encode_chunks(chunks): the ids of every str of an iterable, in one list (empty strs have none). */
static PyObject *ChunkBPE_encode_chunks(ChunkBPE *self, PyObject *arg) {
    PyObject *seq = PySequence_Fast(arg, "encode_chunks: chunks must be an iterable of str");
    if (!seq) return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq), total = 0, k = 0;
    PyObject **items = PySequence_Fast_ITEMS(seq), *result = NULL;
    Py_ssize_t *ends = malloc(((size_t)count + 1) * sizeof(Py_ssize_t));
    uint8_t *buf = NULL;
    IdBuf out = {NULL, 0, 0};
    if (!ends) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t j = 0; j < count; j++) { /* every chunk's UTF-8 first: its length, and any error */
        Py_ssize_t n;
        if (!PyUnicode_Check(items[j])) {
            PyErr_Format(PyExc_TypeError, "encode_chunks: chunk %zd is %.100s, not str", j, Py_TYPE(items[j])->tp_name);
            goto done;
        }
        if (!PyUnicode_AsUTF8AndSize(items[j], &n)) goto done;
        total += n;
    }
    if (!(buf = malloc((size_t)total + 1))) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t j = 0, at = 0; j < count; j++) {
        Py_ssize_t n;
        const char *utf8 = PyUnicode_AsUTF8AndSize(items[j], &n); /* (kept by the str: no new work) */
        if (n == 0) continue;
        memcpy(buf + at, utf8, (size_t)n);
        ends[k++] = at += n;
    }
    buf[total] = 0;
    if (seed_build(self) < 0 || idbuf_reserve_for_call(&out, ids_estimate(self, total) + 1) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    ChunkList list = {{PRETOK_UTF8_KIND, buf, total}, ends, k};
    if (encode_text_unlocked(self, &LIST_SCANNER, &list.text, 1, &out) < 0) { PyErr_NoMemory(); goto done; }
    ids_learn(self, total, out.len);
    result = ids_to_list(self, out.ids, out.len);
done:
    ids_release(out.ids, out.cap);
    free(buf);
    free(ends);
    Py_DECREF(seq);
    return result;
}

/* A scanner that gives the rest of a text as one chunk: encode_pieces encodes each piece whole. */
static Py_ssize_t whole_chunk(const PretokText *t, Py_ssize_t i) { return t->n - i; }

static Py_ssize_t whole_chunks(const PretokText *t, Py_ssize_t i, Py_ssize_t *ends, Py_ssize_t max) {
    (void)i;
    (void)max;
    ends[0] = t->n;
    return 1;
}

static const PretokScanner WHOLE_SCANNER = {whole_chunk, &NO_CLASSES, whole_chunks};

#define PIECES_PAD 64 /* readable bytes after the last piece (the parts' scanner reads ahead) */

/* encode_pieces(pieces, lengths, num_threads=1): each piece whole, the ids encode_chunks gives a
 * chunk (every piece of 2 bytes or more by its parts through the caches: see encode_doc), without the GIL and without a Python object
 * per piece: pieces is their UTF-8 end to end (uint8), lengths their sizes (int32), as chunk
 * counting's buffers hold them. (ids as a writable uint32 buffer, int32 bytes: the number of ids
 * of each piece). Extension and SuperBPE's stage 2 segment every distinct chunk of a corpus so. */
static PyObject *ChunkBPE_encode_pieces(ChunkBPE *self, PyObject *args) {
    Py_buffer data, lens;
    int num_threads = 1;
    if (!PyArg_ParseTuple(args, "y*y*|i", &data, &lens, &num_threads)) return NULL;
    PyObject *result = NULL;
    uint8_t *copy = NULL;
    PretokText *docs = NULL;
    int64_t *ends = NULL;
    signed char *status = NULL;
    int32_t *counts = NULL;
    IdBuf out = {NULL, 0, 0};
    Py_ssize_t count = lens.len / (Py_ssize_t)sizeof(int32_t), total = 0;
    const int32_t *sizes = lens.buf;
    for (Py_ssize_t j = 0; j < count && total <= data.len; j++) total += sizes[j] >= 0 ? sizes[j] : data.len + 1;
    if (lens.len % (Py_ssize_t)sizeof(int32_t) || total != data.len) {
        PyErr_SetString(PyExc_ValueError, "encode_pieces: the lengths (int32) must add up to the bytes of the pieces");
        goto done;
    }
    copy = malloc((size_t)data.len + PIECES_PAD);
    docs = malloc(((size_t)count + 1) * sizeof(PretokText));
    ends = malloc(((size_t)count + 1) * sizeof(int64_t));
    status = malloc((size_t)count + 1);
    counts = malloc(((size_t)count + 1) * sizeof(int32_t));
    if (!copy || !docs || !ends || !status || !counts || seed_build(self) < 0 ||
        idbuf_reserve_for_call(&out, ids_estimate(self, data.len) + 1) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(copy, data.buf, (size_t)data.len);
    memset(copy + data.len, 0, PIECES_PAD);
    for (Py_ssize_t j = 0, at = 0; j < count; at += sizes[j++]) docs[j] = (PretokText){PRETOK_UTF8_KIND, copy + at, sizes[j]};
    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = encode_docs(self, &WHOLE_SCANNER, docs, count, num_threads, &out, ends, status) < 0;
    Py_END_ALLOW_THREADS
    if (failed) { PyErr_NoMemory(); goto done; }
    ids_learn(self, data.len, out.len);
    for (Py_ssize_t j = 0; j < count; j++) counts[j] = (int32_t)(ends[j] - (j ? ends[j - 1] : 0));
    PyObject *ids = id_array_take(&out);
    PyObject *per_piece = PyBytes_FromStringAndSize((const char *)counts, count * (Py_ssize_t)sizeof(int32_t));
    if (ids && per_piece) result = PyTuple_Pack(2, ids, per_piece);
    Py_XDECREF(ids);
    Py_XDECREF(per_piece);
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&lens);
    ids_release(out.ids, out.cap);
    free(copy); free(docs); free(ends); free(status); free(counts);
    return result;
}

/* clear_cache(): empty the caches and give their memory back: every piece cache (with its front
 * cache) no call holds at the moment, and the spare ids buffer. */
static PyObject *ChunkBPE_clear_cache(ChunkBPE *self, PyObject *Py_UNUSED(ignored)) {
#if defined(__GNUC__) || defined(__clang__)
    for (int k = 0; k < PCACHE_POOL; k++) {
        if (__atomic_exchange_n(&self->pcache_busy[k], 1, __ATOMIC_ACQUIRE)) continue; /* in use: kept */
        pcache_free(self->pcache[k]);
        self->pcache[k] = NULL;
        __atomic_store_n(&self->pcache_busy[k], 0, __ATOMIC_RELEASE);
    }
#endif
    free(spare_ids);
    spare_ids = NULL;
    spare_cap = 0;
    Py_RETURN_NONE;
}

/* [(front-cache slots, piece-cache slots, pieces kept)] of the caches the kernel holds now, in pool
 * order (None for a slot never made or in use by a call): how large the adaptive tables are. */
static PyObject *ChunkBPE_cache_sizes(ChunkBPE *self, PyObject *Py_UNUSED(ignored)) {
    PyObject *out = PyList_New(PCACHE_POOL);
    if (!out) return NULL;
    for (int k = 0; k < PCACHE_POOL; k++) {
        PyObject *item = NULL;
        int held = 0;
#if defined(__GNUC__) || defined(__clang__)
        held = !__atomic_exchange_n(&self->pcache_busy[k], 1, __ATOMIC_ACQUIRE);
#endif
        const PieceCache *c = held ? self->pcache[k] : NULL;
        item = c ? Py_BuildValue("(KKI)", (unsigned long long)1 << c->front_bits,
                                 (unsigned long long)(c->slot_mask + 1), c->entries)
                 : Py_NewRef(Py_None);
#if defined(__GNUC__) || defined(__clang__)
        if (held) __atomic_store_n(&self->pcache_busy[k], 0, __ATOMIC_RELEASE);
#endif
        if (!item) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, k, item);
    }
    return out;
}

/* "ranks" mode: the merge list the ranks imply (minbpe's recover_merges). Token t of id r is made
 * by the two parts that this same merge loop, allowed only ids below r, leaves on t's bytes; a
 * token it leaves in more (or fewer) parts is built by no merge. Returns
 * ({(left, right): id} in id order, [ids built by no merge]). */
static PyObject *ChunkBPE_recover_merges(ChunkBPE *self, PyObject *Py_UNUSED(ignored)) {
    if (!self->rank_mode) {
        PyErr_SetString(PyExc_ValueError, "recover_merges needs rank mode");
        return NULL;
    }
    int32_t *ids = malloc((size_t)(self->max_len + 1) * sizeof(int32_t));
    PyObject *merges = PyDict_New(), *unmerged = PyList_New(0), *result = NULL;
    if (!ids || !merges || !unmerged) { PyErr_NoMemory(); goto done; }
    /* 100k+ new tuples would run the cycle collector many times over objects it cannot free */
    int gc_was_on = PyGC_Disable();
    for (int64_t id = 0; id <= self->max_id; id++) {
        int32_t t = self->index_of[id];
        if (t < 0) continue;
        int32_t n = self->toks[t].len;
        const uint8_t *p = self->tok_buf + self->toks[t].start;
        if (n == 1 && self->byte_ids[p[0]] == id) continue;
        Py_ssize_t m = -2;
        if (n >= 2 && token_lookup(self, bytes_hash(p, n), p, n) == t) {
            for (int32_t i = 0; i < n; i++) ids[i] = self->byte_ids[p[i]];
            m = n <= SHORT_CHUNK ? merge_short(self, ids, n, id, p) : merge_long(self, ids, n, id);
            if (m < 0) { PyErr_NoMemory(); break; }
        }
        int failed;
        if (m == 2) {
            PyObject *a = PyLong_FromLong(ids[0]), *b = PyLong_FromLong(ids[1]);
            PyObject *key = (a && b) ? PyTuple_Pack(2, a, b) : NULL;
            PyObject *value = key ? PyLong_FromLongLong(id) : NULL;
            failed = value == NULL || PyDict_SetItem(merges, key, value) < 0;
            Py_XDECREF(a); Py_XDECREF(b); Py_XDECREF(key); Py_XDECREF(value);
        } else {
            PyObject *value = PyLong_FromLongLong(id);
            failed = value == NULL || PyList_Append(unmerged, value) < 0;
            Py_XDECREF(value);
        }
        if (failed) break;
    }
    if (gc_was_on) PyGC_Enable();
    if (!PyErr_Occurred()) result = PyTuple_Pack(2, merges, unmerged);
done:
    free(ids);
    Py_XDECREF(merges);
    Py_XDECREF(unmerged);
    return result;
}

/* split_long_pieces(scanner): cut long pieces into parts with this _pretokenize scanner (None: no
 * more) and encode them by parts (see encode_by_parts), once its class table is set; whether they
 * are (only in "merges" mode, with every token's length known). Not while another thread encodes. */
static PyObject *ChunkBPE_split_long_pieces(ChunkBPE *self, PyObject *capsule) {
    const PretokScanner *scanner = NULL;
    if (capsule != Py_None && !(scanner = PyCapsule_GetPointer(capsule, PRETOK_CAPSULE_NAME))) return NULL;
    self->part_scanner = self->tok_len && !self->slots && !self->rank_mode ? scanner : NULL;
    return PyBool_FromLong(self->part_scanner != NULL);
}

static PyObject *ChunkBPE_first_duplicate(ChunkBPE *self, PyObject *Py_UNUSED(ignored)) {
    if (self->dup_first < 0) Py_RETURN_NONE;
    return Py_BuildValue("(LL)", (long long)self->dup_first, (long long)self->dup_second);
}

static PyMethodDef ChunkBPE_methods[] = {
    {"encode_chunks", (PyCFunction)ChunkBPE_encode_chunks, METH_O,
     "encode_chunks(chunks): the ids of every str of an iterable, in one list (through the same caches as "
     "encode_text)."},
    {"encode_bytes", (PyCFunction)ChunkBPE_encode_bytes, METH_O, "Encode one chunk given as bytes (no cache)."},
    {"encode_text", (PyCFunction)(void (*)(void))ChunkBPE_encode_text, METH_FASTCALL,
     "encode_text(text, scanner, num_threads=1): split text with a _pretokenize scanner and encode every chunk, "
     "without the GIL (a long text on up to num_threads threads); a list of ids, or None if text has a lone "
     "surrogate."},
    {"encode_text_array", (PyCFunction)(void (*)(void))ChunkBPE_encode_text_array, METH_FASTCALL,
     "encode_text_array(text, scanner, num_threads=1): encode_text's ids as a writable uint32 buffer (numpy takes it "
     "without a copy), or None if text has a lone surrogate."},
    {"encode_texts", (PyCFunction)ChunkBPE_encode_texts, METH_VARARGS,
     "encode_texts(texts, scanner, as_lists, num_threads=1): encode_text of each str of a list in one call without "
     "the GIL, on up to num_threads threads; "
     "a list of lists (None: lone surrogate), or (uint32 ids buffer, int64 end offsets bytes, [surrogate texts])."},
    {"encode_pieces", (PyCFunction)ChunkBPE_encode_pieces, METH_VARARGS,
     "encode_pieces(pieces, lengths, num_threads=1): each piece of a flat UTF-8 buffer (int32 lengths) encoded whole, "
     "without the GIL: (uint32 ids buffer, int32 bytes: the number of ids of each piece)."},
    {"clear_cache", (PyCFunction)ChunkBPE_clear_cache, METH_NOARGS,
     "Empty the caches (pieces, the front cache, the spare ids buffer) and give their memory back."},
    {"cache_sizes", (PyCFunction)ChunkBPE_cache_sizes, METH_NOARGS,
     "[(front-cache slots, piece-cache slots, pieces kept) or None] of each cache of the pool."},
    {"split_long_pieces", (PyCFunction)ChunkBPE_split_long_pieces, METH_O,
     "split_long_pieces(scanner): encode pieces longer than 16 bytes by the parts this _pretokenize scanner cuts them "
     "into, with BPE's ids (None: whole); whether it does (\"merges\" mode only)."},
    {"first_duplicate", (PyCFunction)ChunkBPE_first_duplicate, METH_NOARGS,
     "(id, id) of the first two vocabulary tokens found with the same bytes, or None."},
    {"recover_merges", (PyCFunction)ChunkBPE_recover_merges, METH_NOARGS,
     "Rank mode: ({(left, right): id} in id order, [ids no merge builds])."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ChunkBPEType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hf_bbpe._chunk_bpe.ChunkBPE",
    .tp_basicsize = sizeof(ChunkBPE),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "ChunkBPE(merges, byte_ids, cache_max=2**18, tokens=None, rank_mode=False): BPE of chunks.\n\n"
              "tokens=(buf, lengths, ids) (int64 buffers) turns on the whole-piece lookup; rank_mode merges "
              "two parts when their bytes together are a token (tiktoken's rule) instead of by the merges.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)ChunkBPE_init,
    .tp_dealloc = (destructor)ChunkBPE_dealloc,
    .tp_methods = ChunkBPE_methods,
};

/* PlainArrayCall(kernel, scanner, allowed_special, disallowed_special): the common call of
 * Tokenizer.encode_to_numpy (one document, special-token arguments that need no handling) in one C
 * call. Called as f(text, allowed_special, disallowed_special, num_threads), with the same two
 * argument objects it was made for, one thread and a str, it encodes text as encode_text_array
 * does and returns the ids as a uint32 numpy array over that buffer, made with numpy's C API
 * (numpy.frombuffer's argument parsing costs more than encoding a short document); otherwise, or
 * for a text with a lone surrogate, None (the caller takes its general path). Immutable: the
 * Tokenizer makes a new one when its special tokens change. numpy's C API is imported when the
 * first one is made (import hf_bbpe does not import numpy). */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *kernel, *scanner, *allowed, *disallowed;
} PlainArrayCall;

static PyObject *PlainArrayCall_vectorcall(PlainArrayCall *self, PyObject *const *args, size_t nargsf,
                                           PyObject *kwnames) {
    if (PyVectorcall_NARGS(nargsf) != 4 || kwnames) {
        PyErr_SetString(PyExc_TypeError, "PlainArrayCall(text, allowed_special, disallowed_special, num_threads)");
        return NULL;
    }
    if (args[1] != self->allowed || args[2] != self->disallowed || !PyUnicode_Check(args[0]) ||
        !PyLong_CheckExact(args[3]) || PyLong_AsLong(args[3]) != 1)
        Py_RETURN_NONE;
    PyObject *call[2] = {args[0], self->scanner};
    PyObject *ids = encode_whole_text((ChunkBPE *)self->kernel, call, 2, 1);
    if (!ids || ids == Py_None) return ids;
    IdArray *a = (IdArray *)ids; /* the array's base: it frees the ids with the array */
    npy_intp dims[1] = {a->len};
    PyObject *array = PyArray_NewFromDescr(&PyArray_Type, PyArray_DescrFromType(NPY_UINT32), 1, dims, NULL, a->ids,
                                           NPY_ARRAY_CARRAY, NULL);
    if (!array || PyArray_SetBaseObject((PyArrayObject *)array, ids) < 0) {
        Py_XDECREF(array);
        Py_DECREF(ids);
        return NULL;
    }
    return array;
}

static PyObject *PlainArrayCall_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *kernel, *scanner, *allowed, *disallowed;
    if (kwds && PyDict_Size(kwds)) {
        PyErr_SetString(PyExc_TypeError, "PlainArrayCall takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!OOO:PlainArrayCall", &ChunkBPEType, &kernel, &scanner, &allowed, &disallowed) ||
        !get_scanner(scanner))
        return NULL;
    if (!PyArray_API && _import_array() < 0) return NULL;
    PlainArrayCall *self = (PlainArrayCall *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->vectorcall = (vectorcallfunc)PlainArrayCall_vectorcall;
    self->kernel = Py_NewRef(kernel);
    self->scanner = Py_NewRef(scanner);
    self->allowed = Py_NewRef(allowed);
    self->disallowed = Py_NewRef(disallowed);
    return (PyObject *)self;
}

static void PlainArrayCall_dealloc(PlainArrayCall *self) {
    Py_XDECREF(self->kernel);
    Py_XDECREF(self->scanner);
    Py_XDECREF(self->allowed);
    Py_XDECREF(self->disallowed);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject PlainArrayCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hf_bbpe._chunk_bpe.PlainArrayCall",
    .tp_basicsize = sizeof(PlainArrayCall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(PlainArrayCall, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_doc = "PlainArrayCall(kernel, scanner, allowed_special, disallowed_special): "
              "encode_to_numpy's common call in C; f(text, allowed_special, disallowed_special, num_threads) gives "
              "the array, or None when the call is not that one.",
    .tp_new = PlainArrayCall_new,
    .tp_dealloc = (destructor)PlainArrayCall_dealloc,
};

/* batch_grains(texts, scanner, num_threads): how encode_texts would cut this batch into grains (see
 * BATCH_GRAIN_BYTES), for tests: a list of (first text, end text, first byte, is a part); one
 * grain of every text when it would run on one thread. */
static PyObject *batch_grains(PyObject *module, PyObject *args) {
    PyObject *texts, *capsule;
    int num_threads;
    if (!PyArg_ParseTuple(args, "O!Oi", &PyList_Type, &texts, &capsule, &num_threads)) return NULL;
    const PretokScanner *scanner = get_scanner(capsule);
    if (!scanner) return NULL;
    Py_ssize_t count = PyList_GET_SIZE(texts), nparts;
    PretokText *docs = malloc((size_t)(count + 1) * sizeof(PretokText));
    BatchGrain *grains = NULL;
    PartSync *syncs = NULL;
    PyObject *result = NULL;
    if (!docs) return PyErr_NoMemory();
    if (utf8_texts(texts, count, docs) < 0) goto done;
    int split;
    Py_ssize_t ngrains = batch_setup(scanner, docs, count, &num_threads, &split, &nparts);
    if (num_threads <= 1) {
        result = Py_BuildValue("[(nnnO)]", (Py_ssize_t)0, count, (Py_ssize_t)0, Py_False);
        goto done;
    }
    grains = malloc((size_t)ngrains * sizeof(BatchGrain));
    syncs = malloc((size_t)(nparts ? nparts : 1) * sizeof(PartSync));
    if (!grains || !syncs) { PyErr_NoMemory(); goto done; }
    batch_plan(scanner, docs, count, split, grains, syncs, &nparts);
    if (!(result = PyList_New(ngrains))) goto done;
    for (Py_ssize_t g = 0; g < ngrains; g++) {
        PyObject *item = Py_BuildValue("(nnnO)", grains[g].doc, grains[g].doc_end, grains[g].start,
                                       grains[g].sync ? Py_True : Py_False);
        if (!item) { Py_CLEAR(result); goto done; }
        PyList_SET_ITEM(result, g, item);
    }
done:
    free(docs); free(grains); free(syncs);
    return result;
}

static PyMethodDef module_functions[] = {
    {"batch_grains", batch_grains, METH_VARARGS,
     "batch_grains(texts, scanner, num_threads): the grains encode_texts would cut the batch into: "
     "(first text, end text, first byte, is a part of a long text), for tests."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_chunk_bpe", "The chunk encoder's kernel in C (see hf_bbpe/chunk_encoder.py).", -1, module_functions,
};

PyMODINIT_FUNC PyInit__chunk_bpe(void) {
    if (PyType_Ready(&ChunkBPEType) < 0 || PyType_Ready(&IdArrayType) < 0 || PyType_Ready(&PlainArrayCallType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "ChunkBPE", (PyObject *)&ChunkBPEType) < 0 ||
        PyModule_AddObjectRef(m, "PlainArrayCall", (PyObject *)&PlainArrayCallType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
