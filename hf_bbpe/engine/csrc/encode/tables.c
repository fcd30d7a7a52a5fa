/*
 * Building the kernel's tables when it is made: the vocabulary's byte-string table, the pair
 * table (merges, or every split of every token in "ranks" mode), the seed table of short tokens,
 * the tokens' lengths and parts ("merges" mode).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode/encode.h"
#include "encode/lookup.h"

/* An empty pair table for count pairs; 0, or -1 when out of memory. max_id: the largest id of a
 * pair or a merge (-1: unknown); with the byte ids, it decides whether slots can be packed. */
int pairs_alloc(ChunkBPE *self, uint64_t count, int64_t max_id) {
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

void pairs_put(ChunkBPE *self, uint32_t a, uint32_t b, int32_t merged) {
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

/* The seed table: every token of 2 .. FRONT_MAX_PIECE bytes (its lowest id) in an open-addressing
 * table keyed by its bytes like the front cache, so that a chunk that is a whole short token is
 * found in one probe without hashing its bytes, and a short chunk that misses it is known to be no
 * token without a vocabulary lookup. Read-only once built, shared by threads; built by the first
 * call that encodes a whole text (under the GIL), not at load. 0, or -1 when out of memory. */
int seed_build(ChunkBPE *self) {
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

void free_tables(ChunkBPE *self) {
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
int build_token_table(ChunkBPE *self, PyObject *tokens) {
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
int build_rank_pairs(ChunkBPE *self) {
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
int64_t merges_max_id(PyObject *merges) {
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

int build_tok_len(ChunkBPE *self, PyObject *merges, int64_t max_id) {
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
