/*
 * The ids as Python objects: lists of int objects (made once per id and kept), filled without the
 * GIL for a big batch, and IdArray, a writable uint32 buffer that owns the ids.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode/encode.h"

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
PyObject *ids_to_list(ChunkBPE *self, const int32_t *ids, Py_ssize_t n) {
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
PyObject *encode_raw(ChunkBPE *self, const unsigned char *data, Py_ssize_t n) {
    IdBuf buf = {NULL, 0, 0};
    PyObject *out = encode_piece(self, data, n, &buf) < 0 ? PyErr_NoMemory() : ids_to_list(self, buf.ids, buf.len);
    free(buf.ids);
    return out;
}

/* The lists of ids of count texts (text d has ids[ends[d - 1] : ends[d]], None where status[d] is
 * DOC_SURROGATE) for a large batch, with most of the work done without the GIL so that another
 * thread's call encodes meanwhile: the lists are allocated (untracked by the collector) under the
 * GIL, filled with the kernel's int objects without it while the references taken are only
 * counted per id, and the counts are added to the objects' reference counts under the GIL again.
 * This is safe because the lists are reachable by nobody else until returned and id_objects
 * holds a reference to every int object, so none can be freed meanwhile. NULL with an error, or
 * NULL without one when an id has no int object (the caller then builds the lists one by one). */
PyObject *ids_to_lists_unlocked(ChunkBPE *self, const int32_t *ids, const int64_t *ends,
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

PyTypeObject IdArrayType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hf_bbpe.engine.encoding._chunk_bpe.IdArray",
    .tp_basicsize = sizeof(IdArray),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The ids of an encode_texts call: a writable buffer of uint32.",
    .tp_dealloc = (destructor)IdArray_dealloc,
    .tp_as_buffer = &IdArray_as_buffer,
};

/* An IdArray that takes buf's ids (buf is left empty), or NULL with an error. A buffer with a
 * quarter or more of it unused is shrunk to its length first (so that a kept array holds little
 * more memory than its ids; a fuller one is kept as it is, for the spare buffer). */
PyObject *id_array_take(IdBuf *buf) {
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
