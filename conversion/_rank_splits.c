/*
 * Merge recovery's kernel in C, used by conversion/merge_recovery.py.
 *
 * Tokens come sorted by rank, as one byte buffer with int64 start offsets and lengths. For each
 * multi-byte token t, rank-based BPE (tiktoken's algorithm: merge the adjacent pair whose bytes
 * are the token of lowest rank, leftmost on ties) runs on its bytes with only tokens of lower
 * rank allowed; when it ends in exactly two pieces, those are t's merge. A byte-string hash table
 * (compared byte for byte, so exact) finds tokens; each pair's lookup is kept until a merge next
 * to it changes it, so a token of n bytes costs O(n^2) comparisons at worst (n is small).
 *
 * rank_splits(buf, starts, lengths, ranks) -> {(left rank, right rank): rank} in rank order, or
 * ("duplicate", i, j) when tokens i and j (indices) are the same bytes, or None when some token
 * does not end in two pieces (the Python reference then names it). All arrays are int64 bytes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t tag; /* high bits of the hash */
    int32_t idx;  /* token index, or -1 for an empty slot */
} Slot;

typedef struct {
    const uint8_t *buf;
    const int64_t *starts;
    const int64_t *lengths;
    Slot *slots; /* 8 bytes a slot: the table stays small enough for the CPU caches */
    uint64_t mask;
    const uint64_t *powers; /* B^k mod 2^64 */
    int32_t *two_bytes;     /* token index of each 2-byte token, by its bytes, or -1 */
} Table;

#define HASH_BASE 0x9E3779B97F4A7C15ULL

/* Polynomial hash sum((p[i] + 1) * B^i): the hash of a concatenation is h(x) + B^len(x) * h(y),
 * so a pair of pieces is looked up without reading its bytes again. */
static inline uint64_t hash_bytes(const uint8_t *p, int64_t n, const uint64_t *powers) {
    uint64_t h = 0;
    for (int64_t i = 0; i < n; i++) h += (uint64_t)(p[i] + 1) * powers[i];
    return h;
}

static inline uint64_t mixed(uint64_t h) { return h * 0xff51afd7ed558ccdULL; }
static inline uint64_t slot_of(uint64_t h, uint64_t mask) { return mixed(h) >> 20 & mask; }
static inline uint32_t tag_of(uint64_t h) { return (uint32_t)(mixed(h) >> 32); }

/* Index of the token with this hash that equals buf[start:start+n], or -1. */
static inline int64_t lookup(const Table *t, uint64_t h, int64_t start, int64_t n) {
    if (n == 2) return t->two_bytes[t->buf[start] << 8 | t->buf[start + 1]];
    uint64_t j = slot_of(h, t->mask);
    uint32_t tag = tag_of(h);
    for (;;) {
        const Slot *s = &t->slots[j];
        if (s->idx < 0) return -1;
        if (s->tag == tag && t->lengths[s->idx] == n &&
            memcmp(t->buf + t->starts[s->idx], t->buf + start, (size_t)n) == 0)
            return s->idx;
        j = (j + 1) & t->mask;
    }
}

/* The index of the token that pieces k and k+1 together spell, if it ranks below tok. */
static inline int64_t pair_rank(const Table *t, const int64_t *piece_start, const int64_t *piece_len,
                                const uint64_t *piece_hash, int64_t k, int64_t tok) {
    uint64_t h = piece_hash[k] + t->powers[piece_len[k]] * piece_hash[k + 1];
    int64_t r = lookup(t, h, piece_start[k], piece_len[k] + piece_len[k + 1]);
    return (r >= 0 && r < tok) ? r : INT64_MAX;
}

static PyObject *rank_splits(PyObject *self, PyObject *args) {
    Py_buffer bbuf, bstarts, blengths, branks;
    if (!PyArg_ParseTuple(args, "y*y*y*y*", &bbuf, &bstarts, &blengths, &branks)) return NULL;
    const int64_t *ranks = branks.buf;
    PyObject *result = NULL;
    int64_t *left = NULL, *right = NULL, *merged = NULL, *piece_start = NULL, *piece_len = NULL, *pair = NULL;
    uint64_t *piece_hash = NULL, *powers = NULL;
    Table t = {bbuf.buf, bstarts.buf, blengths.buf, NULL, 0, NULL, NULL};
    int64_t count = (int64_t)(bstarts.len / (Py_ssize_t)sizeof(int64_t));
    if (blengths.len != bstarts.len || branks.len != bstarts.len || bstarts.len / 8 >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "starts, lengths and ranks differ in size");
        goto done;
    }
    int64_t max_len = 1;
    for (int64_t i = 0; i < count; i++) {
        if (t.lengths[i] > max_len) max_len = t.lengths[i];
        if (t.starts[i] < 0 || t.lengths[i] < 1 || t.starts[i] + t.lengths[i] > bbuf.len) {
            PyErr_SetString(PyExc_ValueError, "token range outside the buffer, or empty");
            goto done;
        }
    }
    uint64_t cap = 16;
    while (cap < (uint64_t)count * 2) cap <<= 1;
    t.mask = cap - 1;
    t.slots = malloc(cap * sizeof(Slot));
    t.two_bytes = malloc(65536 * sizeof(int32_t));
    powers = malloc((size_t)(max_len + 1) * sizeof(uint64_t));
    left = malloc((size_t)(count + 1) * sizeof(int64_t));
    right = malloc((size_t)(count + 1) * sizeof(int64_t));
    merged = malloc((size_t)(count + 1) * sizeof(int64_t));
    piece_start = malloc((size_t)(max_len + 1) * sizeof(int64_t));
    piece_len = malloc((size_t)(max_len + 1) * sizeof(int64_t));
    piece_hash = malloc((size_t)(max_len + 1) * sizeof(uint64_t));
    pair = malloc((size_t)(max_len + 1) * sizeof(int64_t));
    if (!t.slots || !t.two_bytes || !powers || !left || !right || !merged || !piece_start || !piece_len || !piece_hash || !pair) {
        PyErr_NoMemory();
        goto done;
    }
    powers[0] = 1;
    for (int64_t i = 1; i <= max_len; i++) powers[i] = powers[i - 1] * HASH_BASE;
    t.powers = powers;
    for (uint64_t j = 0; j < cap; j++) t.slots[j].idx = -1;
    for (int j = 0; j < 65536; j++) t.two_bytes[j] = -1;
    for (int64_t i = 0; i < count; i++) {
        const uint8_t *p = t.buf + t.starts[i];
        int64_t n = t.lengths[i];
        uint64_t h = hash_bytes(p, n, powers);
        int64_t other = lookup(&t, h, t.starts[i], n);
        if (other >= 0) {
            result = Py_BuildValue("(sLL)", "duplicate", (long long)other, (long long)i);
            goto done;
        }
        if (n == 2) {
            t.two_bytes[p[0] << 8 | p[1]] = (int32_t)i;
            continue;
        }
        uint64_t j = slot_of(h, t.mask);
        while (t.slots[j].idx >= 0) j = (j + 1) & t.mask;
        t.slots[j].tag = tag_of(h);
        t.slots[j].idx = (int32_t)i;
    }

    int64_t found = 0;
    for (int64_t tok = 0; tok < count; tok++) {
        int64_t n = t.lengths[tok], start = t.starts[tok];
        if (n < 2) continue;
        for (int64_t k = 0; k < n; k++) {
            piece_start[k] = start + k;
            piece_len[k] = 1;
            piece_hash[k] = (uint64_t)(t.buf[start + k] + 1);
        }
        int64_t pieces = n;
        for (int64_t k = 0; k + 1 < pieces; k++) pair[k] = pair_rank(&t, piece_start, piece_len, piece_hash, k, tok);
        while (pieces > 2) {
            int64_t best = INT64_MAX, at = -1;
            for (int64_t k = 0; k + 1 < pieces; k++)
                if (pair[k] < best) { best = pair[k]; at = k; }
            if (at < 0) break;
            piece_hash[at] += powers[piece_len[at]] * piece_hash[at + 1];
            piece_len[at] += piece_len[at + 1];
            size_t tail = (size_t)(pieces - at - 2);
            memmove(piece_start + at + 1, piece_start + at + 2, tail * sizeof(int64_t));
            memmove(piece_len + at + 1, piece_len + at + 2, tail * sizeof(int64_t));
            memmove(piece_hash + at + 1, piece_hash + at + 2, tail * sizeof(uint64_t));
            memmove(pair + at + 1, pair + at + 2, tail * sizeof(int64_t));
            pieces--;
            if (at + 1 < pieces) pair[at] = pair_rank(&t, piece_start, piece_len, piece_hash, at, tok);
            if (at > 0) pair[at - 1] = pair_rank(&t, piece_start, piece_len, piece_hash, at - 1, tok);
        }
        /* the two pieces left are the merge (they cannot merge: together they are tok itself) */
        if (pieces != 2) { result = Py_None; Py_INCREF(result); goto done; }
        int64_t a = lookup(&t, piece_hash[0], piece_start[0], piece_len[0]);
        int64_t b = lookup(&t, piece_hash[1], piece_start[1], piece_len[1]);
        if (a < 0 || b < 0 || a >= tok || b >= tok) { result = Py_None; Py_INCREF(result); goto done; }
        left[found] = a;
        right[found] = b;
        merged[found] = tok;
        found++;
    }
    PyObject *dict = PyDict_New();
    if (dict == NULL) goto done;
    /* 100k+ new tuples would run the cycle collector hundreds of times over objects it cannot free */
    int gc_was_on = PyGC_Disable();
    for (int64_t i = 0; i < found; i++) {
        PyObject *a = PyLong_FromLongLong((long long)ranks[left[i]]);
        PyObject *b = PyLong_FromLongLong((long long)ranks[right[i]]);
        PyObject *key = (a && b) ? PyTuple_Pack(2, a, b) : NULL;
        PyObject *value = key ? PyLong_FromLongLong((long long)ranks[merged[i]]) : NULL;
        int failed = value == NULL || PyDict_SetItem(dict, key, value) < 0;
        Py_XDECREF(a); Py_XDECREF(b); Py_XDECREF(key); Py_XDECREF(value);
        if (failed) {
            Py_DECREF(dict);
            if (gc_was_on) PyGC_Enable();
            goto done;
        }
    }
    if (gc_was_on) PyGC_Enable();
    result = dict;
done:
    free(t.slots); free(t.two_bytes); free(powers); free(left); free(right); free(merged);
    free(piece_start); free(piece_len); free(piece_hash); free(pair);
    PyBuffer_Release(&bbuf);
    PyBuffer_Release(&bstarts);
    PyBuffer_Release(&blengths);
    PyBuffer_Release(&branks);
    return result;
}

static PyMethodDef methods[] = {
    {"rank_splits", rank_splits, METH_VARARGS, "Merge splits of tokens sorted by rank (see the file's comment)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rank_splits", NULL, -1, methods};

PyMODINIT_FUNC PyInit__rank_splits(void) { return PyModule_Create(&module); }
