/*
 * The counts given back: the tables merged in order of first appearance into Buffers (a buffer
 * type that owns its memory), and the text's characters and control characters.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "count/count.h"
#include "count/spill.h"
#include "count/table.h"

/* A writable buffer that owns its memory (malloc), with items of one type: what result() gives. */
typedef struct {
    PyObject_HEAD
    void *data;
    Py_ssize_t nitems, itemsize;
    char format[2];
} Buffer;

static int Buffer_getbuffer(Buffer *self, Py_buffer *view, int flags) {
    view->obj = Py_NewRef(self);
    view->buf = self->data;
    view->len = self->nitems * self->itemsize;
    view->readonly = 0; /* (the merge loop may work in the symbols: trainer.train_flat_merges(consume=True)) */
    view->itemsize = self->itemsize; /* (as array.array gives it, whatever the flags) */
    view->format = (flags & PyBUF_FORMAT) ? self->format : NULL;
    view->ndim = 1;
    view->shape = (flags & PyBUF_ND) == PyBUF_ND ? &self->nitems : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? &self->itemsize : NULL;
    view->suboffsets = NULL;
    view->internal = NULL;
    return 0;
}

static void Buffer_dealloc(Buffer *self) {
    free(self->data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t Buffer_len(Buffer *self) { return self->nitems; }

static PyBufferProcs Buffer_as_buffer = {(getbufferproc)Buffer_getbuffer, NULL};
static PySequenceMethods Buffer_as_sequence = {.sq_length = (lenfunc)Buffer_len};

PyTypeObject BufferType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hf_bbpe.engine.training._chunk_count.Buffer",
    .tp_basicsize = sizeof(Buffer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A buffer of uint8 ('B'), int32 ('i') or int64 ('q') items that owns its memory.",
    .tp_dealloc = (destructor)Buffer_dealloc,
    .tp_as_buffer = &Buffer_as_buffer,
    .tp_as_sequence = &Buffer_as_sequence,
};

/* A Buffer over data (taken: freed with it; shrunk to nitems first). */
static PyObject *buffer_take(void *data, Py_ssize_t nitems, Py_ssize_t itemsize, char format) {
    void *shrunk = realloc(data, (size_t)(nitems ? nitems : 1) * (size_t)itemsize);
    if (shrunk) data = shrunk;
    Buffer *b = PyObject_New(Buffer, &BufferType);
    if (!b) {
        free(data);
        return NULL;
    }
    b->data = data;
    b->nitems = nitems;
    b->itemsize = itemsize;
    b->format[0] = format;
    b->format[1] = 0;
    return (PyObject *)b;
}



void tally_text(TextTally *x, const uint8_t *q, uint64_t len, uint64_t count) {
    uint64_t characters = 0;
    for (uint64_t i = 0; i < len; i++) {
        uint8_t b = q[i];
        int cp = -1;
        characters += (b & 0xC0) != 0x80;
        if (b < 0x20 ? b < 0x09 || b > 0x0D : b == 0x7F) cp = b;
        else if (b == 0xC2 && i + 1 < len && q[i + 1] <= 0x9F && q[i + 1] != 0x85) cp = q[i + 1]; /* U+0080.. */
        if (cp < 0) continue;
        if (!x->control[cp]) x->order[x->norder++] = cp;
        x->control[cp] += count;
    }
    x->characters += characters * count;
}

/* The tables merged in order of first appearance (see the top of the file) into out buffers. */
int merge_tables(Table *tables, int ntables, uint8_t *symbols, int32_t *lengths, int64_t *counts,
                 Py_ssize_t *nchunks, Py_ssize_t *nsymbols, TextTally *text) {
    size_t *seg = calloc((size_t)ntables, sizeof(size_t));
    if (!seg) return -2;
    Py_ssize_t k = 0, s = 0;
    for (;;) {
        int best = -1;
        for (int t = 0; t < ntables; t++) {
            Table *tab = &tables[t];
            while (seg[t] < tab->nsegs &&
                   (seg[t] + 1 < tab->nsegs ? tab->segs[seg[t] + 1].arena_offset : tab->len) ==
                       tab->segs[seg[t]].arena_offset)
                seg[t]++; /* (empty segments) */
            if (seg[t] < tab->nsegs && (best < 0 || tab->segs[seg[t]].unit < tables[best].segs[seg[best]].unit))
                best = t;
        }
        if (best < 0) break;
        Table *tab = &tables[best];
        uint64_t off = tab->segs[seg[best]].arena_offset;
        uint64_t end = seg[best] + 1 < tab->nsegs ? tab->segs[seg[best] + 1].arena_offset : tab->len;
        while (off < end) {
            uint8_t *record = tab->arena + off;
            uint64_t len, count = load_count(record);
            const uint8_t *q = record_chunk(record, &len);
            off = (uint64_t)(q - tab->arena) + len;
            if (!count) continue; /* emitted from an earlier unit of another thread */
            if (ntables > 1) {
                uint64_t h = hash_bytes(q, len);
                for (int t = 0; t < ntables; t++) {
                    if (t == best) continue;
                    uint64_t *slot = table_slot(&tables[t], q, len, h);
                    if (!*slot) continue;
                    uint8_t *other = tables[t].arena + (*slot & OFFSET_MASK) - 1;
                    count += load_count(other);
                    store_count(other, 0);
                }
            }
            if (len > INT32_MAX) {
                free(seg);
                return -1;
            }
            tally_text(text, q, len, count);
            memcpy(symbols + s, q, len);
            s += (Py_ssize_t)len;
            lengths[k] = (int32_t)len;
            counts[k++] = (int64_t)count;
        }
        seg[best]++;
    }
    free(seg);
    *nchunks = k;
    *nsymbols = s;
    return 0;
}

/* (characters, [(control character, count)]) of a TextTally. */
PyObject *text_tally_result(const TextTally *text) {
    PyObject *control = PyList_New(text->norder);
    for (int k = 0; control && k < text->norder; k++) {
        int cp = text->order[k];
        PyObject *pair = Py_BuildValue("(CK)", cp, (unsigned long long)text->control[cp]);
        if (!pair) Py_CLEAR(control);
        else PyList_SET_ITEM(control, k, pair);
    }
    if (!control) return NULL;
    return Py_BuildValue("(KN)", (unsigned long long)text->characters, control);
}

PyObject *Counter_result(Counter *self, PyObject *unused) {
    if (check_usable(self) < 0) return NULL;
    if (self->spill && self->spill->runs) {
        PyErr_SetString(PyExc_RuntimeError, "the counts were spilled to disk: merge_spills(), then write_spilled()");
        return NULL;
    }
    uint64_t records = 0, bytes = 0;
    for (int t = 0; t < self->ntables; t++) {
        records += self->tables[t].records;
        bytes += self->tables[t].chunk_bytes;
    }
    uint8_t *symbols = malloc(bytes ? bytes : 1);
    int32_t *lengths = malloc((records ? records : 1) * sizeof(int32_t));
    int64_t *counts = malloc((records ? records : 1) * sizeof(int64_t));
    if (!symbols || !lengths || !counts) {
        free(symbols);
        free(lengths);
        free(counts);
        return PyErr_NoMemory();
    }
    Py_ssize_t nchunks = 0, nsymbols = 0;
    int status;
    TextTally *text = calloc(1, sizeof(TextTally));
    if (!text) {
        free(symbols);
        free(lengths);
        free(counts);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    status = merge_tables(self->tables, self->ntables, symbols, lengths, counts, &nchunks, &nsymbols, text);
    for (int t = 0; t < self->ntables; t++) table_free(&self->tables[t]);
    Py_END_ALLOW_THREADS
    free(self->tables);
    self->tables = NULL;
    if (status < 0) {
        free(symbols);
        free(lengths);
        free(counts);
        free(text);
        if (status == -2) return PyErr_NoMemory();
        PyErr_SetString(PyExc_OverflowError, "a chunk of 2**31 bytes or more");
        return NULL;
    }
    PyObject *s = buffer_take(symbols, nsymbols, 1, 'B');
    PyObject *l = buffer_take(lengths, nchunks, 4, 'i');
    PyObject *c = buffer_take(counts, nchunks, 8, 'q');
    PyObject *tally = text_tally_result(text);
    free(text);
    if (!s || !l || !c || !tally) {
        Py_XDECREF(s);
        Py_XDECREF(l);
        Py_XDECREF(c);
        Py_XDECREF(tally);
        return NULL;
    }
    PyObject *result = Py_BuildValue("(NNNOO)", s, l, c, PyTuple_GET_ITEM(tally, 0), PyTuple_GET_ITEM(tally, 1));
    Py_DECREF(tally);
    return result;
}

