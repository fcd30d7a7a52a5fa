/*
 * reduce_words: fewer, shorter words for a merge loop that picks by count, then by ids (see below
 * and its doc in module.c).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "merge/merge.h"

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

PyObject *merge_reduce_words(PyObject *self, PyObject *args) {
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
