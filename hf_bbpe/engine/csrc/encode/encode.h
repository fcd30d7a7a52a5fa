/*
 * What the files of the chunk encoder (_chunk_bpe) share: the kernel (ChunkBPE), its caches and
 * tables, id buffers, a long text's parts, and the calls between files. The design is at the top
 * of piece.c.
 */
#ifndef HF_BBPE_ENCODE_ENCODE_H
#define HF_BBPE_ENCODE_ENCODE_H

#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/internal.h"
#include "common/parts.h"
#include "common/threads.h"
#include "scan/scanner.h"

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

/* A merge's rank (merged id) in 32 bits: ids are at most INT32_MAX, and NO_MERGE becomes NO_RANK. */
#define NO_RANK UINT32_MAX

/* A growable array of ids. */
typedef struct {
    int32_t *ids;
    Py_ssize_t len, cap;
} IdBuf;


#define DOC_NO_MEMORY (-1)
#define LISTS_UNLOCKED_MIN_IDS (1 << 16) /* below this, ids_to_lists_unlocked's fixed costs do not pay */
#define DOC_SURROGATE (-2) /* a lone surrogate: the caller encodes this text the slow way */

/* Where a part of a long text split for threads (see encode_text_parallel) meets the next one:
 * marks are the first boundaries of the part's own chunking (its start included) and the length
 * of its ids at each; stops are the next part's marks, where this part may end. */

typedef struct {
    Py_ssize_t marks[SYNC_MARKS], mark_ids[SYNC_MARKS];
    int nmarks;
    const Py_ssize_t *stops; /* NULL: the last part, which runs to the end of the text */
    int nstops;
    int met; /* index in stops where this part ended, or -1: it ran to the end of the text */
} PartSync;

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

/* The ids of a call as a writable buffer of uint32 that owns them: numpy takes it as an array
 * without copying (bytes would be copied in, then out again since numpy cannot write to them). */
typedef struct {
    PyObject_HEAD
    int32_t *ids;
    Py_ssize_t len, cap;
    Py_ssize_t shape;
} IdArray;

/* A growable array of ids: room for extra more (the slow path in ids.c). 0, or -1 when out of memory. */
HF_INTERNAL int idbuf_grow(IdBuf *b, Py_ssize_t extra);
static inline int idbuf_reserve(IdBuf *b, Py_ssize_t extra) {
    return b->len + extra <= b->cap ? 0 : idbuf_grow(b, extra);
}

/* a scanner that gives the rest of a text as one chunk (piece.c); NO_CLASSES: the class table of
 * scanners that need none */
HF_INTERNAL extern uint8_t *const NO_CLASSES;
HF_INTERNAL extern const PretokScanner WHOLE_SCANNER;
HF_INTERNAL extern PyTypeObject ChunkBPEType; /* kernel.c */
HF_INTERNAL extern PyTypeObject IdArrayType;  /* lists.c */

/* ------------------------------------------------------------------ calls between files */

/* cache.c */
HF_INTERNAL void *table_alloc(size_t size);
HF_INTERNAL void table_free(void *p, size_t size);
HF_INTERNAL void huge_pages_advise(void *p, size_t size);
HF_INTERNAL void pcache_free(PieceCache *c);
HF_INTERNAL void pcache_reset(PieceCache *c);
HF_INTERNAL int64_t pcache_put(PieceCache *c, PieceSlot *s, uint64_t h, uint64_t m_hash, const uint8_t *data, Py_ssize_t n,
                               const int32_t *ids, Py_ssize_t m);
HF_INTERNAL PieceCache *pcache_take_from(ChunkBPE *self, int first, int *slot);
HF_INTERNAL void pcache_give(ChunkBPE *self, int slot);
HF_INTERNAL PieceCache *pcache_take(ChunkBPE *self, int *slot);
HF_INTERNAL void pcache_warm_slots(ChunkBPE *self, int num_threads);
HF_INTERNAL void front_review(PieceCache *c);

/* tables.c */
HF_INTERNAL int pairs_alloc(ChunkBPE *self, uint64_t count, int64_t max_id);
HF_INTERNAL void pairs_put(ChunkBPE *self, uint32_t a, uint32_t b, int32_t merged);
HF_INTERNAL int seed_build(ChunkBPE *self);
HF_INTERNAL void free_tables(ChunkBPE *self);
HF_INTERNAL int build_token_table(ChunkBPE *self, PyObject *tokens);
HF_INTERNAL int build_rank_pairs(ChunkBPE *self);
HF_INTERNAL int64_t merges_max_id(PyObject *merges);
HF_INTERNAL int build_tok_len(ChunkBPE *self, PyObject *merges, int64_t max_id);

/* bpe.c */
HF_INTERNAL Py_ssize_t merge_short(const ChunkBPE *self, int32_t *ids, Py_ssize_t n, int64_t limit, const uint8_t *bytes);
HF_INTERNAL Py_ssize_t merge_long(const ChunkBPE *self, int32_t *ids, Py_ssize_t n, int64_t limit);

/* ids.c */
HF_INTERNAL int idbuf_reserve_for_call(IdBuf *b, Py_ssize_t extra);
HF_INTERNAL Py_ssize_t ids_estimate(const ChunkBPE *self, Py_ssize_t bytes);
HF_INTERNAL void ids_learn(ChunkBPE *self, Py_ssize_t bytes, Py_ssize_t ids);
HF_INTERNAL void ids_release(int32_t *ids, Py_ssize_t cap);
HF_INTERNAL void ids_drop_spare(void);

/* piece.c */
HF_INTERNAL int encode_by_parts(const ChunkBPE *self, const uint8_t *data, Py_ssize_t n, IdBuf *out, PieceCache *cache);
HF_INTERNAL int encode_piece(const ChunkBPE *self, const uint8_t *data, Py_ssize_t n, IdBuf *out);
HF_INTERNAL int encode_range(const ChunkBPE *self, const PretokScanner *scanner, const PretokText *t, Py_ssize_t start,
                             IdBuf *out, PieceCache *cache, PartSync *sync);
HF_INTERNAL int encode_doc(const ChunkBPE *self, const PretokScanner *scanner, const PretokText *t, IdBuf *out,
                           PieceCache *cache);

/* threads.c */
HF_INTERNAL int encode_text_parallel(const ChunkBPE *self, const PretokScanner *scanner, const PretokText *t,
                                     int num_threads, IdBuf *out);
HF_INTERNAL Py_ssize_t batch_plan(const PretokScanner *scanner, const PretokText *docs, Py_ssize_t count, int split,
                                  BatchGrain *grains, PartSync *syncs, Py_ssize_t *nparts);
HF_INTERNAL Py_ssize_t batch_setup(const PretokScanner *scanner, const PretokText *docs, Py_ssize_t count, int *num_threads,
                                   int *split, Py_ssize_t *nparts);
HF_INTERNAL int encode_docs(const ChunkBPE *self, const PretokScanner *scanner, const PretokText *docs, Py_ssize_t count,
                            int num_threads, IdBuf *out, int64_t *ends, signed char *status);

/* lists.c */
HF_INTERNAL PyObject *ids_to_list(ChunkBPE *self, const int32_t *ids, Py_ssize_t n);
HF_INTERNAL PyObject *encode_raw(ChunkBPE *self, const unsigned char *data, Py_ssize_t n);
HF_INTERNAL PyObject *ids_to_lists_unlocked(ChunkBPE *self, const int32_t *ids, const int64_t *ends,
                                            const signed char *status, Py_ssize_t count);
HF_INTERNAL PyObject *id_array_take(IdBuf *buf);

/* kernel.c */
HF_INTERNAL const PretokScanner *get_scanner(PyObject *capsule);
HF_INTERNAL int utf8_text(PyObject *text, PretokText *t);
HF_INTERNAL Py_ssize_t utf8_texts(PyObject *list, Py_ssize_t count, PretokText *docs);
HF_INTERNAL PyObject *encode_whole_text(ChunkBPE *self, PyObject *const *args, Py_ssize_t nargs, int as_array);

#endif
