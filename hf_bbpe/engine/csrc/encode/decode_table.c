/*
 * The TokenDecoder type: the token table made from a tokenizer's tokens (decode.h), its skip
 * masks, and its method table (the methods are in decode.c, decode_batch.c and stream.c).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode/decode.h"

#define DENSE_MIN ((int64_t)1 << 20) /* ids below this are always slots; above, 4 slots per token at most */

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* A byte per slot, 1 for the tokens among ids (an iterable of ints; others are left out). */
static PyObject *make_mask(TokenDecoder *self, PyObject *ids) {
    PyObject *mask = PyBytes_FromStringAndSize(NULL, self->nslots);
    if (!mask) return NULL;
    memset(PyBytes_AS_STRING(mask), 0, (size_t)self->nslots);
    PyObject *it = PyObject_GetIter(ids), *item;
    if (!it) {
        Py_DECREF(mask);
        return NULL;
    }
    while ((item = PyIter_Next(it))) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(item, &overflow);
        Py_DECREF(item);
        if (v == -1 && PyErr_Occurred()) break;
        Py_ssize_t slot = overflow || v < 0 ? -1 : decode_slot(self, (uint64_t)v);
        if (slot >= 0) PyBytes_AS_STRING(mask)[slot] = 1;
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) Py_CLEAR(mask);
    return mask;
}

/* TokenDecoder(data, lengths, ids, special_ids, n_vocab, convert): the tokens laid end to end in
 * data, cut by lengths (int64 each), with ids (int64 each, distinct, non-negative); special_ids
 * (an iterable of ints) are what skip_special_tokens skips; n_vocab is for messages; convert(ids) gives
 * ids this decoder does not read as they are as a list of ints (or an array). */
static PyObject *TokenDecoder_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    Py_buffer bdata, blen, bids;
    long long n_vocab;
    PyObject *convert, *special_ids;
    if (kwds && PyDict_Size(kwds)) {
        PyErr_SetString(PyExc_TypeError, "TokenDecoder takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*y*y*OLO:TokenDecoder", &bdata, &blen, &bids, &special_ids, &n_vocab, &convert))
        return NULL;
    TokenDecoder *self = NULL;
    Py_ssize_t count = blen.len / (Py_ssize_t)sizeof(int64_t);
    const int64_t *lengths = blen.buf, *ids = bids.buf;
    if (bids.len != blen.len || !PyCallable_Check(convert)) {
        PyErr_SetString(PyExc_ValueError, "TokenDecoder: lengths and ids differ in size, or convert is not callable");
        goto done;
    }
    int64_t max_id = -1, total = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (ids[i] < 0 || lengths[i] < 0 || lengths[i] > (int64_t)DECODE_LEN_MASK || total + lengths[i] > bdata.len) {
            PyErr_SetString(PyExc_ValueError, "TokenDecoder: a negative id, or a length out of range");
            goto done;
        }
        total += lengths[i];
        if (ids[i] > max_id) max_id = ids[i];
    }
    if (total != bdata.len || total >= ((int64_t)1 << (64 - DECODE_LEN_BITS))) {
        PyErr_SetString(PyExc_ValueError, "TokenDecoder: the lengths do not add up to the data");
        goto done;
    }
    int64_t dense = max_id + 1, limit = DENSE_MIN > 4 * (int64_t)count ? DENSE_MIN : 4 * (int64_t)count;
    if (dense > limit) dense = limit;
    Py_ssize_t nfar = 0;
    for (Py_ssize_t i = 0; i < count; i++) nfar += ids[i] >= dense;
    if (!(self = (TokenDecoder *)type->tp_alloc(type, 0))) goto done;
    self->dense = (Py_ssize_t)dense;
    self->nfar = nfar;
    self->nslots = (Py_ssize_t)dense + nfar;
    self->n_vocab = n_vocab;
    self->convert = Py_NewRef(convert);
    self->data = malloc((size_t)total + DECODE_PAD);
    self->tok = malloc((size_t)(self->nslots ? self->nslots : 1) * sizeof(uint64_t));
    self->far = malloc((size_t)(nfar ? nfar : 1) * sizeof(uint64_t));
    self->text = malloc((size_t)(dense ? dense : 1) * 16);
    if (!self->data || !self->tok || !self->far || !self->text) {
        PyErr_NoMemory();
        Py_CLEAR(self);
        goto done;
    }
    memcpy(self->data, bdata.buf, (size_t)total);
    memset(self->data + total, 0, DECODE_PAD);
    memset(self->tok, 0xff, (size_t)self->nslots * sizeof(uint64_t));
    memset(self->text, 0xff, (size_t)dense * 16); /* (TEXT_NONE) */
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < count; i++)
        if (ids[i] >= dense) self->far[k++] = (uint64_t)ids[i];
    qsort(self->far, (size_t)nfar, sizeof(uint64_t), cmp_u64);
    int64_t at = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t slot = (Py_ssize_t)ids[i];
        if (ids[i] >= dense) { /* its place among the far ids */
            uint64_t *found = bsearch(&ids[i], self->far, (size_t)nfar, sizeof(uint64_t), cmp_u64);
            slot = self->dense + (found - self->far);
        }
        uint64_t not_ascii = 0;
        for (int64_t k = 0; k < lengths[i]; k++) {
            uint8_t b = self->data[at + k];
            not_ascii |= b >> 7;
        }
        if (slot < self->dense) text_entry(self->text + slot * 16, self->data + at, (size_t)lengths[i]);
        self->tok[slot] = (uint64_t)at << DECODE_LEN_BITS | (not_ascii ? DECODE_NOT_ASCII : 0) | (uint64_t)lengths[i];
        at += lengths[i];
    }
    if (!(self->special_mask = make_mask(self, special_ids))) Py_CLEAR(self);
done:
    PyBuffer_Release(&bdata); PyBuffer_Release(&blen); PyBuffer_Release(&bids);
    return (PyObject *)self;
}

static void TokenDecoder_dealloc(TokenDecoder *self) {
    free(self->data);
    free(self->tok);
    free(self->far);
    free(self->text);
    free(self->scratch[0]);
    free(self->scratch[1]);
    Py_XDECREF(self->convert);
    Py_XDECREF(self->special_mask);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *TokenDecoder_mask(TokenDecoder *self, PyObject *ids) { return make_mask(self, ids); }

static PyObject *TokenDecoder_get_special_mask(TokenDecoder *self, void *closure) {
    return Py_NewRef(self->special_mask);
}

static PyObject *TokenDecoder_get_native(TokenDecoder *self, void *closure) { Py_RETURN_TRUE; }

static PyMethodDef TokenDecoder_methods[] = {
    {"decode_bytes", (PyCFunction)(void (*)(void))TokenDecoder_decode_bytes, METH_FASTCALL,
     "decode_bytes(ids, skip=None): the bytes of ids (a list, tuple, buffer of ints, or what convert reads); skip: "
     "a mask() or None. An unknown or negative id raises ValueError naming it and its position."},
    {"decode", (PyCFunction)(void (*)(void))TokenDecoder_decode, METH_FASTCALL,
     "decode(ids, errors='replace', skip=None): decode_bytes' UTF-8 as a str, invalid bytes handled by errors."},
    {"decode_bytes_batch", (PyCFunction)(void (*)(void))TokenDecoder_decode_bytes_batch, METH_FASTCALL,
     "decode_bytes_batch(batch, skip=None, num_threads=1): decode_bytes of each item of the list batch, on threads "
     "without the GIL."},
    {"decode_batch", (PyCFunction)(void (*)(void))TokenDecoder_decode_batch, METH_FASTCALL,
     "decode_batch(batch, errors='replace', skip=None, num_threads=1): decode of each item of the list batch, on "
     "threads without the GIL."},
    {"decode_with_offsets", (PyCFunction)TokenDecoder_decode_with_offsets, METH_O,
     "decode_with_offsets(ids): tiktoken's (text, offsets); invalid UTF-8 raises UnicodeDecodeError."},
    {"stream", (PyCFunction)(void (*)(void))TokenDecoder_stream, METH_FASTCALL,
     "stream(skip=None, errors='replace', prefill=None): a DecodeStream."},
    {"mask", (PyCFunction)TokenDecoder_mask, METH_O,
     "mask(ids): the skip mask of ids (an iterable of ints; those that are no token are left out)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef TokenDecoder_getset[] = {
    {"special_mask", (getter)TokenDecoder_get_special_mask, NULL, "The skip mask of the special tokens.", NULL},
    {"native", (getter)TokenDecoder_get_native, NULL, "True: this is the C decoder.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject TokenDecoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hf_bbpe.engine.encoding._chunk_bpe.TokenDecoder",
    .tp_basicsize = sizeof(TokenDecoder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "TokenDecoder(data, lengths, ids, special_ids, n_vocab, convert): a tokenizer's tokens as one flat "
              "table, decoding ids (see engine/encoding/decoding.py).",
    .tp_new = TokenDecoder_new,
    .tp_dealloc = (destructor)TokenDecoder_dealloc,
    .tp_methods = TokenDecoder_methods,
    .tp_getset = TokenDecoder_getset,
};
