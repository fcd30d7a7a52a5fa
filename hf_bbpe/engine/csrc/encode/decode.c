/*
 * Decoding one sequence of ids: its bytes, its text (Python's UTF-8 codec with the caller's errors
 * handler), and tiktoken's decode_with_offsets. Ids are read into slots first (decode_ids.c),
 * which gives the exact size of the output, then the tokens' bytes are copied.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "encode/decode.h"

#define DECODE_UNLOCKED_BYTES ((size_t)1 << 16) /* copying more than this releases the GIL */

/* The str of UTF-8 data[0:n], invalid bytes handled by errors (NULL: "strict"): valid UTF-8 is
 * measured and written into a str of the right kind here (no GIL needed for that, but for making
 * the str); invalid UTF-8 goes to Python's codec. */
PyObject *decode_utf8(const uint8_t *data, size_t n, const char *errors) {
    uint32_t maxchar;
    ptrdiff_t chars = utf8_measure(data, n, &maxchar);
    if (chars < 0) return PyUnicode_DecodeUTF8((const char *)data, (Py_ssize_t)n, errors);
    PyObject *text = PyUnicode_New(chars, maxchar);
    if (!text) return NULL;
    if (!maxchar) memcpy(PyUnicode_DATA(text), data, n);
    else utf8_fill(data, n, PyUnicode_DATA(text), PyUnicode_KIND(text));
    return text;
}

/* A buffer of need bytes: the decoder's kept one of that use (SCRATCH_BYTES or SCRATCH_SLOTS)
 * when it is free, made larger up to SCRATCH_MAX; else a new one. Give it back with scratch_give.
 * NULL when out of memory. Needs the GIL. */
#define SCRATCH_MAX ((size_t)64 << 20)
void *scratch_take(TokenDecoder *d, int which, size_t need) {
    if (d->scratch_busy[which] || need > SCRATCH_MAX) return malloc(need ? need : 1);
    if (need > d->scratch_cap[which]) {
        size_t cap = need < ((size_t)1 << 16) ? (size_t)1 << 16 : need;
        uint8_t *more = malloc(cap);
        if (!more) return NULL;
        free(d->scratch[which]);
        d->scratch[which] = more;
        d->scratch_cap[which] = cap;
    }
    d->scratch_busy[which] = 1;
    return d->scratch[which];
}

void scratch_give(TokenDecoder *d, int which, void *buf) {
    if (buf && buf == d->scratch[which]) d->scratch_busy[which] = 0;
    else free(buf);
}

/* buf (from scratch_take, or grown from it here; used bytes of it in use) made want bytes: the
 * decoder's kept buffer is copied, not reallocated (the decoder frees it), any other reallocated.
 * NULL when out of memory (buf unchanged). */
void *scratch_grow(const TokenDecoder *d, int which, void *buf, size_t used, size_t want) {
    if (!buf || buf != d->scratch[which]) return realloc(buf, want);
    void *more = malloc(want);
    if (more) memcpy(more, buf, used);
    return more;
}

/* The end of a buffer that scratch_take gave (taken) and scratch_grow may have replaced (now). */
void scratch_done(TokenDecoder *d, int which, void *taken, void *now) {
    if (taken && taken == d->scratch[which]) {
        if (now != taken) free(now);
        scratch_give(d, which, taken);
    } else {
        free(now);
    }
}

/* The errors argument (a str, or absent: "replace") as a C string into *errors: 0, or -1. */
int errors_of(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t at, const char **errors) {
    *errors = "replace";
    if (nargs <= at || args[at] == Py_None) return 0;
    if (!PyUnicode_Check(args[at])) {
        PyErr_SetString(PyExc_TypeError, "errors must be a str");
        return -1;
    }
    return (*errors = PyUnicode_AsUTF8(args[at])) ? 0 : -1;
}

/* Copy src's ids' bytes into out (cap bytes): without the GIL for a buffer of many ids. */
static void copy_ids(const TokenDecoder *d, const IdSource *src, const uint8_t *skip, uint8_t *out, size_t cap,
                     size_t total) {
    if (src->items || total < DECODE_UNLOCKED_BYTES) {
        ids_copy(d, src, skip, out, cap, total);
        return;
    }
    Py_BEGIN_ALLOW_THREADS
    ids_copy(d, src, skip, out, cap, total);
    Py_END_ALLOW_THREADS
}

/* The str of the tokens of slots[0:n] (total bytes; flags from read_slots), invalid UTF-8 handled
 * by errors. ASCII tokens are copied straight into their str. Otherwise the bytes are copied into a
 * buffer, whose one pass (utf8_starts) gives the characters and the kind of the str, exact when
 * the bytes are valid UTF-8; they are written into the str checking just that, and Python's codec
 * decodes the buffer when they are not. */
static PyObject *buf_to_str(const uint8_t *buf, size_t total, uint64_t flags, const char *errors) {
    PyObject *text;
    if (!(flags & DECODE_NOT_ASCII)) {
        if ((text = PyUnicode_New((Py_ssize_t)total, 127))) memcpy(PyUnicode_DATA(text), buf, total);
        return text;
    }
    uint8_t top;
    size_t chars = utf8_starts(buf, total, &top);
    uint32_t maxchar = top < 0x80 ? 127 : top < 0xC4 ? 0xFF : top < 0xF0 ? 0xFFFF : 0x10FFFF;
    if ((text = PyUnicode_New((Py_ssize_t)chars, maxchar)) &&
        utf8_fill_checked(buf, total, PyUnicode_DATA(text), PyUnicode_KIND(text), chars) < 0) {
        Py_DECREF(text);
        text = PyUnicode_DecodeUTF8((const char *)buf, (Py_ssize_t)total, errors);
    }
    return text;
}

static PyObject *slots_to_str(TokenDecoder *d, const int32_t *slots, Py_ssize_t n, size_t total, uint64_t flags,
                              const char *errors) {
    PyObject *text;
    if (!(flags & DECODE_NOT_ASCII)) {
        if ((text = PyUnicode_New((Py_ssize_t)total, 127))) slots_copy(d, slots, n, PyUnicode_DATA(text), total);
        return text;
    }
    uint8_t *buf = scratch_take(d, SCRATCH_BYTES, total + DECODE_PAD);
    if (!buf) return PyErr_NoMemory();
    slots_copy(d, slots, n, buf, total + DECODE_PAD);
    text = buf_to_str(buf, total, flags, errors);
    scratch_give(d, SCRATCH_BYTES, buf);
    return text;
}

/* The bytes (as_str 0) or the text of ids, leaving out what skip marks. Ids are read into slots
 * first (checked, the output counted), except a buffer's for bytes: those are checked and counted
 * in one pass and copied in another. */
static PyObject *decode_one(TokenDecoder *self, PyObject *ids, PyObject *mask, int as_str, const char *errors) {
    const uint8_t *skip;
    IdSource src;
    size_t total = 0;
    uint64_t flags = 0;
    PyObject *result = NULL;
    if (skip_of(self, mask, &skip) < 0) return NULL;
    if (!as_str && !PyList_CheckExact(ids) && !PyTuple_CheckExact(ids)) {
        if (ids_open_checked(self, ids, skip, &src, &total, &flags) < 0) return NULL;
        if ((result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total)))
            copy_ids(self, &src, skip, (uint8_t *)PyBytes_AS_STRING(result), total, total);
        ids_close(&src);
        return result;
    }
    if (as_str && (PyList_CheckExact(ids) || PyTuple_CheckExact(ids) ||
                   (PyObject_CheckBuffer(ids) && !PyBytes_Check(ids) && !PyByteArray_Check(ids)))) {
        if ((result = ids_to_text(self, ids, skip)) || PyErr_Occurred()) return result;
    }
    int32_t *slots = NULL, *taken;
    Py_ssize_t n = 0, cap = 0;
    /* room for all its ids (a length that is wrong only costs growing the buffer) */
    cap = PyList_CheckExact(ids) || PyTuple_CheckExact(ids) ? PySequence_Fast_GET_SIZE(ids)
          : PyObject_CheckBuffer(ids) ? PyObject_Length(ids) : -1;
    if (cap < 0) PyErr_Clear(), cap = 0;
    else if (!(slots = scratch_take(self, SCRATCH_SLOTS, (size_t)cap * sizeof(int32_t)))) cap = 0;
    taken = slots;
    if (read_slots(self, ids, skip, &slots, &cap, &n, &total, &flags, -1) == 0) {
        if (as_str) result = slots_to_str(self, slots, n, total, flags, errors);
        else if ((result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total)))
            slots_copy(self, slots, n, (uint8_t *)PyBytes_AS_STRING(result), total);
    }
    scratch_done(self, SCRATCH_SLOTS, taken, slots);
    return result;
}

PyObject *TokenDecoder_decode_bytes(TokenDecoder *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "decode_bytes(ids, skip=None)");
        return NULL;
    }
    return decode_one(self, args[0], nargs > 1 ? args[1] : Py_None, 0, NULL);
}

PyObject *TokenDecoder_decode(TokenDecoder *self, PyObject *const *args, Py_ssize_t nargs) {
    const char *errors;
    if (nargs < 1 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "decode(ids, errors='replace', skip=None)");
        return NULL;
    }
    if (errors_of(args, nargs, 1, &errors) < 0) return NULL;
    return decode_one(self, args[0], nargs > 2 ? args[2] : Py_None, 1, errors);
}

/* tiktoken's decode_with_offsets: each token's offset is the index of the first character that
 * holds one of its bytes (the characters before it are the bytes before it that are not UTF-8
 * continuation bytes, less one when it starts with a continuation byte), and the text is strict
 * UTF-8 (UnicodeDecodeError, as tiktoken raises). */
PyObject *TokenDecoder_decode_with_offsets(TokenDecoder *self, PyObject *ids) {
    int32_t *slots = NULL;
    Py_ssize_t n = 0, cap = 0;
    size_t total = 0;
    uint64_t flags = 0;
    if (read_slots(self, ids, NULL, &slots, &cap, &n, &total, &flags, -1) < 0) {
        free(slots);
        return NULL;
    }
    PyObject *offsets = PyList_New(n), *text = NULL, *result = NULL;
    uint8_t *buf = malloc(total + DECODE_PAD);
    if (!offsets || !buf) {
        if (!buf) PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t text_len = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t t = self->tok[slots[i]];
        size_t len = tok_len(t);
        const uint8_t *p = tok_bytes(self, t);
        Py_ssize_t starts_inside = len && (p[0] & 0xC0) == 0x80;
        PyObject *offset = PyLong_FromSsize_t(text_len - starts_inside > 0 ? text_len - starts_inside : 0);
        if (!offset) goto done;
        PyList_SET_ITEM(offsets, i, offset);
        for (size_t k = 0; k < len; k++) text_len += (p[k] & 0xC0) != 0x80;
    }
    slots_copy(self, slots, n, buf, total + DECODE_PAD);
    if ((text = decode_utf8(buf, total, "strict"))) result = PyTuple_Pack(2, text, offsets);
done:
    free(slots);
    free(buf);
    Py_XDECREF(offsets);
    Py_XDECREF(text);
    return result;
}
