/*
 * Ids as callers hold them, read for the decoder: a list's or tuple's ints, a 1-d buffer of native
 * integers (numpy arrays of any int dtype, array.array, memoryview), or anything else through the
 * Python converter (decoding.kernel_ids: a torch tensor as numpy, the rest as token_id_list
 * gives it, with its TokenIdTypeError for a non-integer). Each id becomes its slot in the token
 * table (decode.h); an unknown or negative id raises ValueError naming it and its position.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common/grow.h"
#include "encode/decode.h"

/* Whether view is a 1-d buffer of native integers the decoder reads (else the converter reads it). */
static int buffer_readable(const Py_buffer *view, int *is_signed) {
    const char *f = view->format ? view->format : "B";
    if (*f == '@' || *f == '=') f++;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    else if (*f == '<') f++;
#endif
    if (view->ndim != 1 || !f[0] || f[1]) return 0;
    if (view->itemsize != 1 && view->itemsize != 2 && view->itemsize != 4 && view->itemsize != 8) return 0;
    switch (f[0]) {
    case 'b': case 'h': case 'i': case 'l': case 'q': case 'n': *is_signed = 1; return 1;
    case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N': *is_signed = 0; return 1;
    default: return 0;
    }
}

/* src for ids read here as they are: 1; 0 when they are not (a list of other objects than ints,
 * an iterator, a tensor...); -1 with an error. */
static int ids_open_as_is(PyObject *ids, IdSource *src) {
    memset(src, 0, sizeof *src);
    if (PyList_CheckExact(ids) || PyTuple_CheckExact(ids)) {
        src->items = PySequence_Fast_ITEMS(ids);
        src->n = PySequence_Fast_GET_SIZE(ids);
        src->owner = Py_NewRef(ids);
        return 1;
    }
    if (PyBytes_Check(ids) || PyByteArray_Check(ids) || PyUnicode_Check(ids) || !PyObject_CheckBuffer(ids)) return 0;
    if (PyObject_GetBuffer(ids, &src->view, PyBUF_RECORDS_RO) < 0) {
        PyErr_Clear(); /* (a buffer that is not readable so: the converter reads it) */
        return 0;
    }
    if (!buffer_readable(&src->view, &src->is_signed)) {
        PyBuffer_Release(&src->view);
        return 0;
    }
    src->buf = src->view.buf;
    src->n = src->view.shape ? src->view.shape[0] : src->view.len / src->view.itemsize;
    src->stride = src->view.strides ? src->view.strides[0] : src->view.itemsize;
    src->itemsize = (int)src->view.itemsize;
    src->owner = Py_NewRef(ids);
    return 1;
}

/* src for ids: as they are, or through d->convert. 0, or -1 with an error (the converter's
 * TokenIdTypeError for a non-integer). */
int ids_open(const TokenDecoder *d, PyObject *ids, IdSource *src) {
    int found = ids_open_as_is(ids, src);
    if (found) return found < 0 ? -1 : 0;
    PyObject *converted = PyObject_CallOneArg(d->convert, ids);
    if (!converted) return -1;
    found = ids_open_as_is(converted, src);
    Py_DECREF(converted);
    if (found > 0) return 0;
    if (!found) PyErr_SetString(PyExc_TypeError, "token ids: the converter gave no list of ints");
    return -1;
}

void ids_close(IdSource *src) {
    if (src->buf) PyBuffer_Release(&src->view);
    src->buf = NULL;
    Py_CLEAR(src->owner);
}

/* ValueError: id (a new reference, or NULL: out of memory) is no token, at position of sequence. */
void bad_id(const TokenDecoder *d, PyObject *id, Py_ssize_t position, Py_ssize_t sequence) {
    if (!id) return;
    if (sequence < 0)
        PyErr_Format(PyExc_ValueError, "unknown token id %S at position %zd (n_vocab=%lld)", id, position, d->n_vocab);
    else
        PyErr_Format(PyExc_ValueError, "unknown token id %S at position %zd of sequence %zd (n_vocab=%lld)", id,
                     position, sequence, d->n_vocab);
    Py_DECREF(id);
}

/* The id at position i of src as a Python int (for a message). */
static PyObject *id_object(const IdSource *src, Py_ssize_t i) {
    if (src->items) return Py_NewRef(src->items[i]);
    const char *p = src->buf + i * src->stride;
    switch (src->itemsize * (src->is_signed ? -1 : 1)) {
    case 1: return PyLong_FromUnsignedLong(*(const uint8_t *)p);
    case -1: return PyLong_FromLong(*(const int8_t *)p);
    case 2: { uint16_t v; memcpy(&v, p, 2); return PyLong_FromUnsignedLong(v); }
    case -2: { int16_t v; memcpy(&v, p, 2); return PyLong_FromLong(v); }
    case 4: { uint32_t v; memcpy(&v, p, 4); return PyLong_FromUnsignedLong(v); }
    case -4: { int32_t v; memcpy(&v, p, 4); return PyLong_FromLong(v); }
    case 8: { uint64_t v; memcpy(&v, p, 8); return PyLong_FromUnsignedLongLong(v); }
    default: { int64_t v; memcpy(&v, p, 8); return PyLong_FromLongLong(v); }
    }
}

/* BODY for each id of src (as uint64_t id at position i; UINT64_MAX, no token, for a negative
 * one or one past 64 bits); DECODE_NEEDS_CONVERT is returned for a list item that is no exact int. */
#define BUFFER_IDS(TYPE, STYPE, ...)                                                                                  \
    for (Py_ssize_t i = 0; i < n; i++) {                                                                               \
        TYPE v_;                                                                                                       \
        memcpy(&v_, buf + i * stride, sizeof v_);                                                                      \
        uint64_t id = src->is_signed && (STYPE)v_ < 0 ? UINT64_MAX : (uint64_t)v_;                                     \
        __VA_ARGS__                                                                                                    \
    }
#define EACH_ID(...)                                                                                                   \
    do {                                                                                                               \
        Py_ssize_t n = src->n, stride = src->stride;                                                                   \
        if (src->items) {                                                                                              \
            PyObject *const *items = src->items;                                                                       \
            for (Py_ssize_t i = 0; i < n; i++) {                                                                       \
                PyObject *o_ = items[i];                                                                               \
                uint64_t id;                                                                                           \
                if (!PyLong_CheckExact(o_)) return DECODE_NEEDS_CONVERT;                                               \
                if (!int_id(o_, &id)) id = UINT64_MAX;                                                                 \
                __VA_ARGS__                                                                                            \
            }                                                                                                          \
            break;                                                                                                     \
        }                                                                                                              \
        const char *buf = src->buf;                                                                                    \
        switch (src->itemsize) {                                                                                       \
        case 1: BUFFER_IDS(uint8_t, int8_t, __VA_ARGS__) break;                                                               \
        case 2: BUFFER_IDS(uint16_t, int16_t, __VA_ARGS__) break;                                                             \
        case 4: BUFFER_IDS(uint32_t, int32_t, __VA_ARGS__) break;                                                             \
        default: BUFFER_IDS(uint64_t, int64_t, __VA_ARGS__) break;                                                            \
        }                                                                                                              \
    } while (0)

/* The slots of src's ids into slots (room for src->n), leaving out those skip marks (a byte per
 * slot, or NULL); how many, with their bytes added to *total and their table entries or-ed into
 * *flags (DECODE_NOT_ASCII: one has a byte above 0x7F). -1 with an error naming a bad id
 * (of sequence, -1 for a single call); DECODE_NEEDS_CONVERT for a list holding something other
 * than an exact int (the converter reads it). Needs the GIL (a list's ints). */
Py_ssize_t ids_to_slots(const TokenDecoder *d, const IdSource *src, const uint8_t *skip, int32_t *slots,
                        size_t *total, uint64_t *flags, Py_ssize_t sequence) {
    Py_ssize_t m = 0;
    size_t sum = 0;
    uint64_t any = 0;
    EACH_ID({
        Py_ssize_t slot = decode_slot(d, id);
        if (slot < 0) {
            bad_id(d, id_object(src, i), i, sequence);
            return -1;
        }
        if (skip && skip[slot]) continue;
        slots[m++] = (int32_t)slot;
        uint64_t t = d->tok[slot];
        sum += tok_len(t);
        any |= t;
    });
    *total += sum;
    *flags |= any;
    return m;
}

/* Ids from..from+k of src (k <= ID_BLOCK) into ids (UINT64_MAX for a negative one or one past 64
 * bits), the text entry of each dense one fetched into the cache meanwhile: the ints of a list
 * are independent loads, and so are their entries. 0, or DECODE_NEEDS_CONVERT for a list item that
 * is no exact int. Needs the GIL (a list's ints). */
int ids_read_block(const TokenDecoder *d, const IdSource *src, Py_ssize_t from, Py_ssize_t k, uint64_t *ids) {
    const uint8_t *text = d->text;
    uint64_t dense = (uint64_t)d->dense;
    if (src->items) {
        PyObject *const *items = src->items + from;
        for (Py_ssize_t j = 0; j < k; j++) {
            PyObject *o = items[j];
            uint64_t id;
            if (!PyLong_CheckExact(o)) return DECODE_NEEDS_CONVERT;
            if (!int_id(o, &id)) id = UINT64_MAX;
            if (id < dense) __builtin_prefetch(text + id * 16);
            ids[j] = id;
        }
        return 0;
    }
    Py_ssize_t n = k, stride = src->stride;
    const char *buf = src->buf + from * stride;
#define BLOCK_ID ids[i] = id; if (id < dense) __builtin_prefetch(text + id * 16);
    switch (src->itemsize) {
    case 1: BUFFER_IDS(uint8_t, int8_t, BLOCK_ID) break;
    case 2: BUFFER_IDS(uint16_t, int16_t, BLOCK_ID) break;
    case 4: BUFFER_IDS(uint32_t, int32_t, BLOCK_ID) break;
    default: BUFFER_IDS(uint64_t, int64_t, BLOCK_ID) break;
    }
#undef BLOCK_ID
    return 0;
}

/* Check src's ids as ids_to_slots does, without keeping their slots: 0, with the bytes of those
 * not skipped added to *total and their table entries or-ed into *flags (DECODE_NOT_ASCII: one
 * has a byte above 0x7F); or -1 or DECODE_NEEDS_CONVERT as there. */
Py_ssize_t ids_measure(const TokenDecoder *d, const IdSource *src, const uint8_t *skip, size_t *total, uint64_t *flags,
                       Py_ssize_t sequence) {
    size_t sum = 0;
    uint64_t any = 0;
    EACH_ID({
        Py_ssize_t slot = decode_slot(d, id);
        if (slot < 0) {
            bad_id(d, id_object(src, i), i, sequence);
            return -1;
        }
        if (skip && skip[slot]) continue;
        uint64_t t = d->tok[slot];
        sum += tok_len(t);
        any |= t;
    });
    *total += sum;
    *flags |= any;
    return 0;
}

/* The bytes of src's ids (ids_measure found them good) not skipped into out, which holds cap
 * bytes (at least their sum, total): a token of up to 16 bytes is copied as 16 while out has room.
 * The GIL is needed for a list's ints, not for a buffer's (whose owner may change it meanwhile:
 * then what does not fit is left out and the rest of out up to total is zeros). */
static Py_ssize_t ids_copy_(const TokenDecoder *d, const IdSource *src, const uint8_t *skip, uint8_t *out, size_t cap,
                            size_t *written) {
    const uint64_t *tok = d->tok;
    size_t at = 0;
    *written = 0;
    EACH_ID({
        Py_ssize_t slot = decode_slot(d, id);
        if (slot < 0 || (skip && skip[slot])) continue;
        uint64_t t = tok[slot];
        size_t len = tok_len(t);
        if (len > cap - at) break;
        if (len <= 16 && at + 16 <= cap) memcpy(out + at, tok_bytes(d, t), 16);
        else memcpy(out + at, tok_bytes(d, t), len);
        at += len;
    });
    *written = at;
    return 0;
}

void ids_copy(const TokenDecoder *d, const IdSource *src, const uint8_t *skip, uint8_t *out, size_t cap, size_t total) {
    size_t written;
    ids_copy_(d, src, skip, out, cap, &written);
    if (written < total) memset(out + written, 0, total - written);
}

/* src open on ids and measured (ids_measure): through the converter when they are not read as
 * they are. 0, or -1 with an error (src then closed). */
int ids_open_checked(const TokenDecoder *d, PyObject *ids, const uint8_t *skip, IdSource *src, size_t *total,
                     uint64_t *flags) {
    if (ids_open(d, ids, src) < 0) return -1;
    Py_ssize_t status = ids_measure(d, src, skip, total, flags, -1);
    if (status == DECODE_NEEDS_CONVERT) {
        ids_close(src);
        PyObject *list = PyObject_CallOneArg(d->convert, ids);
        if (!list) return -1;
        int found = ids_open_as_is(list, src);
        Py_DECREF(list);
        if (found <= 0) {
            if (!found) PyErr_SetString(PyExc_TypeError, "token ids: the converter gave no list of ints");
            return -1;
        }
        status = ids_measure(d, src, skip, total, flags, -1);
        if (status == DECODE_NEEDS_CONVERT) PyErr_SetString(PyExc_TypeError, "token ids: the converter gave no list of ints");
    }
    if (status < 0) {
        ids_close(src);
        return -1;
    }
    return 0;
}

/* The slots of ids (as a caller holds them) appended to *slots (*len of *cap used; malloc'd,
 * grown here, freed by the caller), their bytes added to *total and their flags or-ed into *flags
 * (ids_to_slots), skipping what skip marks. 0, or -1 with an error. Needs the GIL. */
int read_slots(const TokenDecoder *d, PyObject *ids, const uint8_t *skip, int32_t **slots, Py_ssize_t *cap,
               Py_ssize_t *len, size_t *total, uint64_t *flags, Py_ssize_t sequence) {
    IdSource src;
    for (int converted = 0;; converted = 1) {
        if (converted) {
            PyObject *list = PyObject_CallOneArg(d->convert, ids);
            if (!list) return -1;
            int found = ids_open_as_is(list, &src);
            Py_DECREF(list);
            if (found <= 0) {
                if (!found) PyErr_SetString(PyExc_TypeError, "token ids: the converter gave no list of ints");
                return -1;
            }
        } else if (ids_open(d, ids, &src) < 0) {
            return -1;
        }
        if (*len + src.n > *cap || !*slots) {
            Py_ssize_t want = (Py_ssize_t)grown_capacity((size_t)*cap, (size_t)(*len + src.n), 16);
            int32_t *more = scratch_grow(d, SCRATCH_SLOTS, *slots, (size_t)*len * sizeof(int32_t),
                                         (size_t)want * sizeof(int32_t));
            if (!more) {
                ids_close(&src);
                PyErr_NoMemory();
                return -1;
            }
            *slots = more;
            *cap = want;
        }
        size_t sum = 0;
        uint64_t any = 0;
        Py_ssize_t m = ids_to_slots(d, &src, skip, *slots + *len, &sum, &any, sequence);
        ids_close(&src);
        if (m >= 0) {
            *len += m;
            *total += sum;
            *flags |= any;
            return 0;
        }
        if (m != DECODE_NEEDS_CONVERT || converted) {
            if (m == DECODE_NEEDS_CONVERT) PyErr_SetString(PyExc_TypeError, "token ids: the converter gave no list of ints");
            return -1;
        }
    }
}

/* The bytes of slots[0:n] into out, which holds cap bytes (at least their sum): a token of up to
 * 16 bytes is copied as 16 (the table is padded) while out has room for that. No GIL needed. */
void slots_copy(const TokenDecoder *d, const int32_t *slots, Py_ssize_t n, uint8_t *out, size_t cap) {
    const uint8_t *data = d->data;
    const uint64_t *tok = d->tok;
    size_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t t = tok[slots[i]];
        size_t len = tok_len(t);
        const uint8_t *from = data + (t >> DECODE_LEN_BITS);
        if (len <= 16 && at + 16 <= cap) memcpy(out + at, from, 16);
        else memcpy(out + at, from, len);
        at += len;
    }
}

/* The byte mask of a call's skip argument (None: none) into *skip: 0, or -1 with an error. */
int skip_of(const TokenDecoder *d, PyObject *mask, const uint8_t **skip) {
    *skip = NULL;
    if (mask == Py_None) return 0;
    if (!PyBytes_CheckExact(mask) || PyBytes_GET_SIZE(mask) != d->nslots) {
        PyErr_SetString(PyExc_TypeError, "skip must be None or a mask made by this decoder's mask()");
        return -1;
    }
    *skip = (const uint8_t *)PyBytes_AS_STRING(mask);
    return 0;
}
