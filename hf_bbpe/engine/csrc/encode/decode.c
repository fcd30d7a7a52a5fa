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

/* A buffer of need bytes: the decoder's kept one when it is free and large enough (made larger
 * up to SCRATCH_MAX), else a new one; give it back with scratch_give. NULL when out of memory. */
#define SCRATCH_MAX ((size_t)64 << 20)
static uint8_t *scratch_take(TokenDecoder *d, size_t need) {
    if (d->scratch_busy || need > SCRATCH_MAX) return malloc(need);
    if (need > d->scratch_cap) {
        size_t cap = need < ((size_t)1 << 16) ? (size_t)1 << 16 : need;
        uint8_t *more = malloc(cap);
        if (!more) return NULL;
        free(d->scratch);
        d->scratch = more;
        d->scratch_cap = cap;
    }
    d->scratch_busy = 1;
    return d->scratch;
}

static void scratch_give(TokenDecoder *d, uint8_t *buf) {
    if (buf == d->scratch) d->scratch_busy = 0;
    else free(buf);
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

/* The bytes (as_str 0) or the text of ids, leaving out what skip marks: the ids are checked and
 * their bytes counted first, then copied into the result (a text of ASCII tokens straight into
 * its str), or a buffer that becomes the str. */
static PyObject *decode_one(TokenDecoder *self, PyObject *ids, PyObject *mask, int as_str, const char *errors) {
    const uint8_t *skip;
    IdSource src;
    size_t total = 0;
    uint64_t flags = 0;
    if (skip_of(self, mask, &skip) < 0 || ids_open_checked(self, ids, skip, &src, &total, &flags) < 0) return NULL;
    PyObject *result = NULL;
    if (!as_str) {
        if ((result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total)))
            copy_ids(self, &src, skip, (uint8_t *)PyBytes_AS_STRING(result), total, total);
    } else if (!(flags & DECODE_NOT_ASCII)) {
        if ((result = PyUnicode_New((Py_ssize_t)total, 127)))
            copy_ids(self, &src, skip, PyUnicode_DATA(result), total, total);
    } else {
        uint8_t *buf = scratch_take(self, total + DECODE_PAD);
        if (!buf) {
            PyErr_NoMemory();
        } else {
            copy_ids(self, &src, skip, buf, total + DECODE_PAD, total);
            result = decode_utf8(buf, total, errors);
            scratch_give(self, buf);
        }
    }
    ids_close(&src);
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
    if (read_slots(self, ids, NULL, &slots, &cap, &n, &total, -1) < 0) {
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
