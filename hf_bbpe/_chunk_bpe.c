/*
 * The chunk encoder's kernel in C (hot path of encoding), used by hf_bbpe/chunk_encoder.py.
 *
 * Same algorithm and result as the Python ChunkEncoder: repeatedly merge the adjacent pair with
 * the lowest merge id, all its occurrences left to right (minbpe's _encode_chunk). Chunks of up
 * to SHORT_CHUNK tokens use that loop directly; longer ones a heap of (merge id, position) over
 * a doubly linked list, O(n log n). A dict caches the ids of short chunks, cleared when full.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_hash.h"

#define SHORT_CHUNK 32
#define CACHE_MAX_CHARS 128
#define NO_MERGE INT64_MAX

typedef struct {
    PyObject_HEAD
    uint64_t *keys;
    int32_t *vals;
    uint64_t mask;
    int32_t byte_ids[256];
    PyObject *cache;
    Py_ssize_t cache_max;
} ChunkBPE;

static inline int64_t rank_of(const ChunkBPE *self, int32_t a, int32_t b) {
    uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    uint64_t j = mix64(key) & self->mask;
    while (self->keys[j] != UINT64_MAX) {
        if (self->keys[j] == key) return self->vals[j];
        j = (j + 1) & self->mask;
    }
    return NO_MERGE;
}

static Py_ssize_t merge_short(const ChunkBPE *self, int32_t *ids, Py_ssize_t n) {
    while (n >= 2) {
        int64_t best = NO_MERGE;
        Py_ssize_t at = -1;
        for (Py_ssize_t i = 0; i + 1 < n; i++) {
            int64_t r = rank_of(self, ids[i], ids[i + 1]);
            if (r < best) { best = r; at = i; }
        }
        if (at < 0) break;
        int32_t a = ids[at], b = ids[at + 1];
        Py_ssize_t j = 0;
        for (Py_ssize_t i = 0; i < n;) {
            if (i + 1 < n && ids[i] == a && ids[i + 1] == b) { ids[j++] = (int32_t)best; i += 2; }
            else ids[j++] = ids[i++];
        }
        n = j;
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

/* Heap over a linked list; returns the new length or -1 (memory). */
static Py_ssize_t merge_long(const ChunkBPE *self, int32_t *ids, Py_ssize_t n) {
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
        int64_t r = rank_of(self, ids[i], ids[i + 1]);
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
            int64_t r = rank_of(self, ids[i], ids[k]);
            if (r != NO_MERGE) { Job nj = {r, i}; job_push(heap, &hlen, nj); }
        }
        Py_ssize_t p = prv[i];
        if (p >= 0) {
            int64_t r = rank_of(self, ids[p], ids[i]);
            if (r != NO_MERGE) { Job nj = {r, p}; job_push(heap, &hlen, nj); }
        }
    }
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i >= 0; i = nxt[i]) ids[m++] = ids[i];
    free(nxt); free(prv); free(heap);
    return m;
}

/* Encode raw bytes into a new list of ids. */
static PyObject *encode_raw(const ChunkBPE *self, const unsigned char *data, Py_ssize_t n) {
    int32_t small[SHORT_CHUNK * 4];
    int32_t *ids = n <= (Py_ssize_t)(sizeof(small) / sizeof(small[0])) ? small : malloc((n + 1) * sizeof(int32_t));
    if (!ids) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) ids[i] = self->byte_ids[data[i]];
    Py_ssize_t m = n <= SHORT_CHUNK ? merge_short(self, ids, n) : merge_long(self, ids, n);
    PyObject *out = NULL;
    if (m < 0) PyErr_NoMemory();
    else if ((out = PyList_New(m))) {
        for (Py_ssize_t i = 0; i < m; i++) {
            PyObject *v = PyLong_FromLong(ids[i]);
            if (!v) { Py_CLEAR(out); break; }
            PyList_SET_ITEM(out, i, v);
        }
    }
    if (ids != small) free(ids);
    return out;
}

static int ChunkBPE_init(ChunkBPE *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"merges", "byte_ids", "cache_max", NULL};
    PyObject *merges, *byte_ids;
    Py_ssize_t cache_max = 1 << 18;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O|n", kwlist, &PyDict_Type, &merges, &byte_ids, &cache_max))
        return -1;
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
    uint64_t cap = 16;
    while (cap < (uint64_t)PyDict_Size(merges) * 2 + 2) cap <<= 1;
    free(self->keys);
    free(self->vals);
    self->keys = malloc(cap * sizeof(uint64_t));
    self->vals = malloc(cap * sizeof(int32_t));
    if (!self->keys || !self->vals) { PyErr_NoMemory(); return -1; }
    memset(self->keys, 0xff, cap * sizeof(uint64_t));
    self->mask = cap - 1;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(merges, &pos, &key, &value)) {
        long a, b, r;
        if (!PyTuple_Check(key) || PyTuple_GET_SIZE(key) != 2) {
            PyErr_SetString(PyExc_TypeError, "merges keys must be (int, int) tuples");
            return -1;
        }
        a = PyLong_AsLong(PyTuple_GET_ITEM(key, 0));
        b = PyLong_AsLong(PyTuple_GET_ITEM(key, 1));
        r = PyLong_AsLong(value);
        if (PyErr_Occurred()) return -1;
        uint64_t k = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
        uint64_t j = mix64(k) & self->mask;
        while (self->keys[j] != UINT64_MAX && self->keys[j] != k) j = (j + 1) & self->mask;
        self->keys[j] = k;
        self->vals[j] = (int32_t)r;
    }
    Py_XSETREF(self->cache, PyDict_New());
    self->cache_max = cache_max;
    return self->cache ? 0 : -1;
}

static void ChunkBPE_dealloc(ChunkBPE *self) {
    free(self->keys);
    free(self->vals);
    Py_XDECREF(self->cache);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *ChunkBPE_encode_bytes(ChunkBPE *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *out = encode_raw(self, view.buf, view.len);
    PyBuffer_Release(&view);
    return out;
}

static PyObject *ChunkBPE_encode_chunks(ChunkBPE *self, PyObject *arg) {
    PyObject *it = PyObject_GetIter(arg);
    if (!it) return NULL;
    PyObject *out = PyList_New(0), *chunk;
    if (!out) { Py_DECREF(it); return NULL; }
    while ((chunk = PyIter_Next(it))) {
        PyObject *ids = PyDict_GetItemWithError(self->cache, chunk);  /* borrowed */
        if (ids) Py_INCREF(ids);
        else if (PyErr_Occurred()) goto fail;
        else {
            Py_ssize_t size;
            const char *utf8 = PyUnicode_AsUTF8AndSize(chunk, &size);
            if (!utf8) goto fail;
            PyObject *list = encode_raw(self, (const unsigned char *)utf8, size);
            if (!list) goto fail;
            ids = PyList_AsTuple(list);
            Py_DECREF(list);
            if (!ids) goto fail;
            if (PyUnicode_GET_LENGTH(chunk) <= CACHE_MAX_CHARS) {
                if (PyDict_Size(self->cache) >= self->cache_max) PyDict_Clear(self->cache);
                if (PyDict_SetItem(self->cache, chunk, ids) < 0) { Py_DECREF(ids); goto fail; }
            }
        }
        Py_ssize_t n = PyTuple_GET_SIZE(ids);
        for (Py_ssize_t i = 0; i < n; i++) {
            if (PyList_Append(out, PyTuple_GET_ITEM(ids, i)) < 0) { Py_DECREF(ids); goto fail; }
        }
        Py_DECREF(ids);
        Py_DECREF(chunk);
        continue;
    fail:
        Py_DECREF(chunk);
        Py_DECREF(it);
        Py_DECREF(out);
        return NULL;
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) { Py_DECREF(out); return NULL; }
    return out;
}

static PyObject *ChunkBPE_clear_cache(ChunkBPE *self, PyObject *Py_UNUSED(ignored)) {
    PyDict_Clear(self->cache);
    Py_RETURN_NONE;
}

static PyMethodDef ChunkBPE_methods[] = {
    {"encode_chunks", (PyCFunction)ChunkBPE_encode_chunks, METH_O,
     "Encode each str of an iterable and return all ids in one list (cached)."},
    {"encode_bytes", (PyCFunction)ChunkBPE_encode_bytes, METH_O, "Encode one chunk given as bytes (no cache)."},
    {"clear_cache", (PyCFunction)ChunkBPE_clear_cache, METH_NOARGS, "Empty the chunk cache."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ChunkBPEType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hf_bbpe._chunk_bpe.ChunkBPE",
    .tp_basicsize = sizeof(ChunkBPE),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "ChunkBPE(merges, byte_ids, cache_max=2**18): BPE of chunks with fixed merges.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)ChunkBPE_init,
    .tp_dealloc = (destructor)ChunkBPE_dealloc,
    .tp_methods = ChunkBPE_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_chunk_bpe", "The chunk encoder's kernel in C (see hf_bbpe/chunk_encoder.py).", -1, NULL,
};

PyMODINIT_FUNC PyInit__chunk_bpe(void) {
    if (PyType_Ready(&ChunkBPEType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ChunkBPEType);
    if (PyModule_AddObject(m, "ChunkBPE", (PyObject *)&ChunkBPEType) < 0) {
        Py_DECREF(&ChunkBPEType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
