/*
 * What the decoder's files share (decode_table.c, decode_ids.c, decode.c, decode_text.c,
 * decode_batch.c, stream.c): the token table (TokenDecoder), ids as callers hold them
 * (IdSource), the calls between files. The Python twin is engine/encoding/decoding_reference.py.
 *
 * The table is every token's bytes end to end, and per slot the token's place in them. An id
 * below `dense` is its own slot; the few ids above (special tokens given large ids) are kept
 * sorted in `far` and found by binary search, slot dense + their index. A dense id also has a
 * 16-byte text entry: the token's UTF-16 units when it is valid UTF-8 alone and short (its
 * characters when they are ASCII), else its bytes when they are few, so that decode() to a str
 * mostly copies one entry an id (decode_text.c).
 * Built once per tokenizer (the Tokenizer drops it when its tokens change) and read-only after:
 * threads share it.
 */
#ifndef HF_BBPE_ENCODE_DECODE_H
#define HF_BBPE_ENCODE_DECODE_H

#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/internal.h"
#if PY_VERSION_HEX < 0x030B0000
#include <longintrepr.h>
#endif

#define DECODE_PAD 16               /* zero bytes after the tokens: a short token is copied as 16 bytes */
#define ID_BLOCK 64                 /* ids read at a time, ahead of their use (ids_read_block) */
#define DECODE_LEN_BITS 24          /* a slot: offset << DECODE_LEN_BITS | DECODE_NOT_ASCII or not | length */
#define DECODE_NOT_ASCII (UINT64_C(1) << (DECODE_LEN_BITS - 1)) /* the token has a byte above 0x7F */
#define DECODE_LEN_MASK (DECODE_NOT_ASCII - 1)
#define DECODE_NO_TOKEN UINT64_MAX  /* a slot of an id that is no token */
/* A text entry (TokenDecoder.text): TEXT_UNITS UTF-16 units, or TEXT_BYTES bytes, then a uint16: */
#define TEXT_UNITS 7
#define TEXT_BYTES 14
#define TEXT_COUNT 0x000F  /* how many units (or ASCII characters); for TEXT_RAW, bytes (0: more than
                              TEXT_BYTES, read from tok) */
#define TEXT_RAW 0x0010    /* the entry holds bytes: the token is not valid UTF-8 alone, or has too many units */
#define TEXT_LATIN1 0x0020 /* it has a character above U+007F */
#define TEXT_WIDE 0x0040   /* above U+00FF */
#define TEXT_ASTRAL 0x0080 /* above U+FFFF (two units) */
#define TEXT_ASCII 0x0100  /* the entry holds the token's characters, all ASCII, a byte each */
#define TEXT_NONE 0xFFFF   /* no token has this id */

typedef struct {
    PyObject_HEAD
    uint8_t *data;      /* every token's bytes end to end, then DECODE_PAD zeros */
    uint64_t *tok;      /* per slot: its bytes' offset << DECODE_LEN_BITS | DECODE_NOT_ASCII or 0 | their length */
    Py_ssize_t dense;   /* ids below this are slots */
    uint64_t *far;      /* the ids of the other tokens, sorted: slot dense + index */
    uint8_t *text;      /* per id below dense, its 16-byte text entry */
    Py_ssize_t nfar, nslots;
    long long n_vocab;  /* for messages */
    PyObject *convert;  /* ids -> a list of ints or an array (decoding.kernel_ids), for what is read here no other way */
    PyObject *special_mask; /* bytes: per slot, 1 for a special token */
    uint8_t *scratch[2]; /* buffers kept for the next call (a large one costs its page faults every time): */
    size_t scratch_cap[2]; /* [SCRATCH_BYTES] for bytes, [SCRATCH_SLOTS] for slots (see scratch_take) */
    int scratch_busy[2]; /* taken (under the GIL) by a call that runs */
} TokenDecoder;

static inline size_t tok_len(uint64_t t) { return (size_t)(t & DECODE_LEN_MASK); }
static inline const uint8_t *tok_bytes(const TokenDecoder *d, uint64_t t) { return d->data + (t >> DECODE_LEN_BITS); }

/* The slot of id, or -1 when it is no token. */
static inline Py_ssize_t decode_slot(const TokenDecoder *d, uint64_t id) {
    if (id < (uint64_t)d->dense) return d->tok[id] == DECODE_NO_TOKEN ? -1 : (Py_ssize_t)id;
    Py_ssize_t lo = 0, hi = d->nfar;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (d->far[mid] < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < d->nfar && d->far[lo] == id ? d->dense + lo : -1;
}

/* The id of an exact int: 1 (UINT64_MAX, which is no token, for a negative one); 0 when it does
 * not fit 64 bits (then it is no token either). */
static inline int int_id(PyObject *o, uint64_t *value) {
#if PY_VERSION_HEX >= 0x030C0000
    if (PyUnstable_Long_IsCompact((PyLongObject *)o)) {
        Py_ssize_t v = PyUnstable_Long_CompactValue((PyLongObject *)o);
        *value = v < 0 ? UINT64_MAX : (uint64_t)v;
        return 1;
    }
#else
    Py_ssize_t size = Py_SIZE(o);
    if (size == 0 || size == 1) {
        *value = size ? (uint64_t)((PyLongObject *)o)->ob_digit[0] : 0;
        return 1;
    }
#endif
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) return 0;
    *value = v < 0 ? UINT64_MAX : (uint64_t)v;
    return 1;
}

/* Ids as a caller holds them: a list's or tuple's items (exact ints), or a 1-d buffer of native
 * integers of itemsize bytes, signed or not, every stride bytes. */
typedef struct {
    PyObject *const *items; /* NULL: a buffer */
    const char *buf;
    Py_ssize_t stride, n;
    int itemsize, is_signed;
    PyObject *owner;        /* a new reference that keeps what is read alive (the list, or a converted form) */
    Py_buffer view;         /* held when buf is set */
} IdSource;

/* What reading ids returns for a list holding something other than exact ints: the converter
 * (decoding.kernel_ids) reads them. */
#define DECODE_NEEDS_CONVERT (-2)

HF_INTERNAL extern PyTypeObject TokenDecoderType; /* decode_table.c */
HF_INTERNAL extern PyTypeObject DecodeStreamType; /* stream.c */

/* decode_ids.c */
HF_INTERNAL int ids_open(const TokenDecoder *d, PyObject *ids, IdSource *src);
HF_INTERNAL void ids_close(IdSource *src);
HF_INTERNAL void bad_id(const TokenDecoder *d, PyObject *id, Py_ssize_t position, Py_ssize_t sequence);
HF_INTERNAL Py_ssize_t ids_to_slots(const TokenDecoder *d, const IdSource *src, const uint8_t *skip, int32_t *slots,
                                    size_t *total, uint64_t *flags, Py_ssize_t sequence);
HF_INTERNAL Py_ssize_t ids_measure(const TokenDecoder *d, const IdSource *src, const uint8_t *skip, size_t *total,
                                   uint64_t *flags, Py_ssize_t sequence);
HF_INTERNAL int ids_read_block(const TokenDecoder *d, const IdSource *src, Py_ssize_t from, Py_ssize_t k,
                               uint64_t *ids);
HF_INTERNAL void ids_copy(const TokenDecoder *d, const IdSource *src, const uint8_t *skip, uint8_t *out, size_t cap,
                          size_t total);
HF_INTERNAL int ids_open_checked(const TokenDecoder *d, PyObject *ids, const uint8_t *skip, IdSource *src, size_t *total,
                                 uint64_t *flags);
HF_INTERNAL void slots_copy(const TokenDecoder *d, const int32_t *slots, Py_ssize_t n, uint8_t *out, size_t cap);
HF_INTERNAL int skip_of(const TokenDecoder *d, PyObject *mask, const uint8_t **skip);
HF_INTERNAL int read_slots(const TokenDecoder *d, PyObject *ids, const uint8_t *skip, int32_t **slots,
                           Py_ssize_t *cap, Py_ssize_t *len, size_t *total, uint64_t *flags, Py_ssize_t sequence);
HF_INTERNAL int errors_of(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t at, const char **errors);

/* decode.c */
enum { SCRATCH_BYTES, SCRATCH_SLOTS };
HF_INTERNAL void *scratch_take(TokenDecoder *d, int which, size_t need);
HF_INTERNAL void scratch_give(TokenDecoder *d, int which, void *buf);
HF_INTERNAL void *scratch_grow(const TokenDecoder *d, int which, void *buf, size_t used, size_t want);
HF_INTERNAL void scratch_done(TokenDecoder *d, int which, void *taken, void *now);
HF_INTERNAL PyObject *TokenDecoder_decode_bytes(TokenDecoder *self, PyObject *const *args, Py_ssize_t nargs);
HF_INTERNAL PyObject *TokenDecoder_decode(TokenDecoder *self, PyObject *const *args, Py_ssize_t nargs);
HF_INTERNAL PyObject *TokenDecoder_decode_with_offsets(TokenDecoder *self, PyObject *ids);
HF_INTERNAL PyObject *decode_utf8(const uint8_t *data, size_t n, const char *errors);

/* decode_text.c */
HF_INTERNAL void text_entry(uint8_t *entry, const uint8_t *bytes, size_t len);
HF_INTERNAL PyObject *ids_to_text(TokenDecoder *d, PyObject *ids, const uint8_t *skip);

/* decode_batch.c */
HF_INTERNAL PyObject *TokenDecoder_decode_batch(TokenDecoder *self, PyObject *const *args, Py_ssize_t nargs);
HF_INTERNAL PyObject *TokenDecoder_decode_bytes_batch(TokenDecoder *self, PyObject *const *args, Py_ssize_t nargs);

/* stream.c */
HF_INTERNAL PyObject *TokenDecoder_stream(TokenDecoder *self, PyObject *const *args, Py_ssize_t nargs);

#endif
