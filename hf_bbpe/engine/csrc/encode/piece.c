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
 *
 * This file: a text's chunks encoded in blocks (encode_range), a piece that the front cache does
 * not hold (encode_uncached: vocabulary, piece cache, BPE), and long pieces by parts.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode/encode.h"
#include "encode/lookup.h"

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
int encode_by_parts(const ChunkBPE *self, const uint8_t *data, Py_ssize_t n, IdBuf *out, PieceCache *cache) {
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
int encode_piece(const ChunkBPE *self, const uint8_t *data, Py_ssize_t n, IdBuf *out) {
    if (idbuf_reserve(out, n + 1) < 0) return -1;
    if (n == 1) {
        out->ids[out->len++] = self->byte_ids[data[0]];
        return 0;
    }
    uint64_t h = self->slots ? bytes_hash(data, n) : 0;
    return encode_uncached(self, data, n, out, NULL, NULL, 0, 0, h, self->slots ? mix64(h) : 0, 0, 0, 0);
}

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

/* Split the UTF-8 text t[start:] (see utf8_text) with a scanner of csrc/scan/ and append the
 * ids of every chunk to out, with no Python object: it runs without the GIL. Chunks go in blocks
 * (see BLOCK_CHUNKS). With a sync, it records the ids' length at its marks and ends at the first
 * stop it reaches once past them (maybe mid-block: the rest of the block is dropped). 0, or
 * DOC_NO_MEMORY. */
int encode_range(const ChunkBPE *self, const PretokScanner *scanner, const PretokText *t, Py_ssize_t start,
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
                    int met = sync_meet(sync->stops, sync->nstops, &stop, j);
                    if (met == SYNC_NO_MARK) sync->stops = NULL; /* no stop left: run to the end */
                    else if (met >= 0) {
                        sync->met = met;
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

/* A document, or with WHOLE_SCANNER a piece of encode_pieces. Those pieces are a corpus's distinct
 * chunks (each comes once: SuperBPE's stage 2 and extend), so a piece of several parts is never
 * looked up in the caches whole nor kept there, where it would only push out what repeats: where
 * the kernel splits long pieces (see encode_by_parts), every piece of 2 bytes or more is encoded by
 * its parts (the words of stage 1, which repeat), short ones too; a piece that is one part (one
 * word) goes through the caches as that part. */
int encode_doc(const ChunkBPE *self, const PretokScanner *scanner, const PretokText *t, IdBuf *out,
               PieceCache *cache) {
    if (t->n < 0) return DOC_SURROGATE;
    if (scanner == &WHOLE_SCANNER && t->n >= 2 && by_parts(self, FRONT_MAX_PIECE + 1, cache))
        return encode_by_parts(self, t->data, t->n, out, cache) < 0 ? DOC_NO_MEMORY : 0;
    return encode_range(self, scanner, t, 0, out, cache, NULL);
}

/* A scanner that gives the rest of a text as one chunk: encode_pieces encodes each piece whole. */
static Py_ssize_t whole_chunk(const PretokText *t, Py_ssize_t i) { return t->n - i; }

static Py_ssize_t whole_chunks(const PretokText *t, Py_ssize_t i, Py_ssize_t *ends, Py_ssize_t max) {
    (void)i;
    (void)max;
    ends[0] = t->n;
    return 1;
}

uint8_t *const NO_CLASSES = NULL;
const PretokScanner WHOLE_SCANNER = {whole_chunk, &NO_CLASSES, whole_chunks};
