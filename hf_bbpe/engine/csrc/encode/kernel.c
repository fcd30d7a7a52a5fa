/*
 * The ChunkBPE type: made (its tables) and freed, and its methods: encode_text(_array),
 * encode_texts, encode_bytes, encode_chunks, encode_pieces, the caches, recover_merges.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode/encode.h"
#include "encode/lookup.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

const PretokScanner *get_scanner(PyObject *capsule) {
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
int utf8_text(PyObject *text, PretokText *t) {
    t->kind = PRETOK_UTF8_KIND;
    if ((t->data = PyUnicode_AsUTF8AndSize(text, &t->n))) return 0;
    if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return -1;
    PyErr_Clear();
    t->n = -1;
    return 1;
}

/* utf8_text of each item of a list, refusing one that is not a str: the bytes of those with
   UTF-8 (a lone surrogate has none), or -1 with an exception. */
Py_ssize_t utf8_texts(PyObject *list, Py_ssize_t count, PretokText *docs) {
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

/* encode_text(text, scanner, num_threads=1) and encode_text_array(...): the ids of a whole text as
 * a list (as_array: an IdArray), or None for a lone surrogate; a text of 2 * PARALLEL_PART_MIN
 * bytes of UTF-8 or more is cut into up to num_threads parts. (Called once per document: its
 * arguments are read without building a tuple.) */
PyObject *encode_whole_text(ChunkBPE *self, PyObject *const *args, Py_ssize_t nargs, int as_array) {
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
    ids_drop_spare();
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

PyTypeObject ChunkBPEType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hf_bbpe.engine.encoding._chunk_bpe.ChunkBPE",
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
