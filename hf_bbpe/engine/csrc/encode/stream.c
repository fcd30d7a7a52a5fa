/*
 * DecodeStream: decoding ids as a server generates them (Tokenizer.decode_stream; the twin is
 * decoding_reference.ReferenceDecodeStream). step(id or ids) gives the text they complete, or
 * None when nothing is whole yet. The bytes of an unfinished character (at most 3) wait in the
 * stream; a step that leaves one unfinished returns None and its text waits too (as tokenizers'
 * DecodeStream does), so the step that finishes it returns both. Python's stateful UTF-8 codec,
 * with the stream's errors handler, says what is whole; flush() ends the stream.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode/decode.h"

typedef struct {
    PyObject_HEAD
    TokenDecoder *dec;
    PyObject *mask;       /* the skip mask (bytes), or None */
    PyObject *errors;     /* str */
    const char *errors_c; /* its UTF-8, alive as long as it */
    uint8_t pending[8];   /* the bytes of an unfinished character */
    int npending;
    PyObject *held;       /* the text of the steps since the last that left no character unfinished, or NULL */
} DecodeStream;

/* The text of the pending bytes then data[0:n], as far as it is whole (the rest waits): a new
 * reference, or NULL with an error (then nothing changed). */
static PyObject *feed(DecodeStream *s, const uint8_t *data, size_t n) {
    uint8_t small[64], *heap = NULL;
    const uint8_t *from = data;
    size_t len = n;
    if (s->npending) {
        len = (size_t)s->npending + n;
        uint8_t *joined = len <= sizeof small ? small : (heap = malloc(len));
        if (!joined) return PyErr_NoMemory();
        memcpy(joined, s->pending, (size_t)s->npending);
        if (n) memcpy(joined + s->npending, data, n);
        from = joined;
    }
    Py_ssize_t consumed;
    PyObject *text = PyUnicode_DecodeUTF8Stateful((const char *)from, (Py_ssize_t)len, s->errors_c, &consumed);
    if (text && len - (size_t)consumed > sizeof s->pending) { /* (the codec keeps at most 3) */
        PyErr_SetString(PyExc_RuntimeError, "DecodeStream: more bytes left than a character has");
        Py_CLEAR(text);
    }
    if (text) {
        s->npending = (int)(len - (size_t)consumed);
        memmove(s->pending, from + consumed, (size_t)s->npending);
    }
    free(heap);
    return text;
}

/* What a step returns for text (a new reference, taken): held text and it, or None while a
 * character is unfinished (then it is held) or when there is no text. */
static PyObject *emit(DecodeStream *s, PyObject *text) {
    if (!text) return NULL;
    if (s->held) {
        PyObject *joined = PyUnicode_Concat(s->held, text);
        Py_DECREF(text);
        if (!joined) return NULL;
        Py_CLEAR(s->held);
        text = joined;
    }
    if (s->npending) {
        if (PyUnicode_GET_LENGTH(text)) s->held = text;
        else Py_DECREF(text);
        Py_RETURN_NONE;
    }
    if (!PyUnicode_GET_LENGTH(text)) {
        Py_DECREF(text);
        Py_RETURN_NONE;
    }
    return text;
}

/* The text of ids (any form) fed to the stream, not yet emitted. */
static PyObject *feed_ids(DecodeStream *s, PyObject *ids) {
    const uint8_t *skip;
    int32_t *slots = NULL;
    Py_ssize_t n = 0, cap = 0;
    size_t total = 0;
    uint64_t flags = 0;
    PyObject *text = NULL;
    if (skip_of(s->dec, s->mask, &skip) < 0 || read_slots(s->dec, ids, skip, &slots, &cap, &n, &total, &flags, -1) < 0) {
        free(slots);
        return NULL;
    }
    uint8_t *buf = malloc(total + DECODE_PAD);
    if (!buf) {
        PyErr_NoMemory();
    } else {
        slots_copy(s->dec, slots, n, buf, total + DECODE_PAD);
        text = feed(s, buf, total);
        free(buf);
    }
    free(slots);
    return text;
}

static PyObject *DecodeStream_step(DecodeStream *s, PyObject *ids) {
    uint64_t id;
    if (!PyLong_CheckExact(ids)) return emit(s, feed_ids(s, ids));
    if (!int_id(ids, &id)) id = UINT64_MAX;
    const TokenDecoder *d = s->dec;
    Py_ssize_t slot = decode_slot(d, id);
    if (slot < 0) {
        bad_id(d, Py_NewRef(ids), 0, -1);
        return NULL;
    }
    if (s->mask != Py_None && PyBytes_AS_STRING(s->mask)[slot]) Py_RETURN_NONE; /* (nothing held is ready either) */
    uint64_t t = d->tok[slot];
    const uint8_t *data = tok_bytes(d, t);
    size_t len = tok_len(t);
    if (!s->npending && !s->held && len && data[0] < 0x80 && len == 1) /* one ASCII byte */
        return PyUnicode_DecodeUTF8((const char *)data, 1, s->errors_c);
    return emit(s, feed(s, data, len));
}

static PyObject *DecodeStream_flush(DecodeStream *s, PyObject *unused) {
    PyObject *text = PyUnicode_DecodeUTF8((const char *)s->pending, s->npending, s->errors_c);
    if (!text) return NULL;
    s->npending = 0;
    return emit(s, text);
}

static PyObject *DecodeStream_get_pending(DecodeStream *s, void *closure) {
    return PyBytes_FromStringAndSize((const char *)s->pending, s->npending);
}

/* stream(skip=None, errors="replace", prefill=None) of a TokenDecoder. */
PyObject *TokenDecoder_stream(TokenDecoder *self, PyObject *const *args, Py_ssize_t nargs) {
    const char *errors;
    if (nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "stream(skip=None, errors='replace', prefill=None)");
        return NULL;
    }
    PyObject *mask = nargs > 0 ? args[0] : Py_None;
    const uint8_t *skip;
    if (skip_of(self, mask, &skip) < 0 || errors_of(args, nargs, 1, &errors) < 0) return NULL;
    DecodeStream *s = PyObject_New(DecodeStream, &DecodeStreamType);
    if (!s) return NULL;
    s->dec = (TokenDecoder *)Py_NewRef(self);
    s->mask = Py_NewRef(mask);
    s->errors = PyUnicode_FromString(errors);
    s->errors_c = s->errors ? PyUnicode_AsUTF8(s->errors) : NULL;
    s->npending = 0;
    s->held = NULL;
    if (!s->errors_c) {
        Py_DECREF(s);
        return NULL;
    }
    if (nargs > 2 && args[2] != Py_None) { /* the prompt: its text is not returned, what it leaves unfinished waits */
        PyObject *text = feed_ids(s, args[2]);
        if (!text) {
            Py_DECREF(s);
            return NULL;
        }
        Py_DECREF(text);
    }
    return (PyObject *)s;
}

static void DecodeStream_dealloc(DecodeStream *s) {
    Py_XDECREF(s->dec);
    Py_XDECREF(s->mask);
    Py_XDECREF(s->errors);
    Py_XDECREF(s->held);
    PyObject_Free(s);
}

static PyMethodDef DecodeStream_methods[] = {
    {"step", (PyCFunction)DecodeStream_step, METH_O,
     "step(ids): the text that the next id (or ids) complete, or None while no character is whole."},
    {"flush", (PyCFunction)DecodeStream_flush, METH_NOARGS,
     "flush(): the end of the stream: the text held and the bytes still waiting, decoded with errors, or None."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef DecodeStream_getset[] = {
    {"pending", (getter)DecodeStream_get_pending, NULL, "The bytes waiting for the rest of their character.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject DecodeStreamType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hf_bbpe.engine.encoding._chunk_bpe.DecodeStream",
    .tp_basicsize = sizeof(DecodeStream),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Streaming decode (Tokenizer.decode_stream): step(ids) -> str | None, flush() -> str | None.",
    .tp_dealloc = (destructor)DecodeStream_dealloc,
    .tp_methods = DecodeStream_methods,
    .tp_getset = DecodeStream_getset,
};
