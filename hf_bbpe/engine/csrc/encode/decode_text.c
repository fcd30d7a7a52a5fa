/*
 * decode() of a list, tuple or buffer of ids to a str, in one pass over the ids. Most tokens are
 * valid UTF-8 by themselves (all but those that start or end inside a character) and short, so
 * their text entry (decode.h) holds their characters: the pass copies one entry an id, as
 * decode_bytes copies bytes. The bytes of the other tokens (a character cut between tokens, a
 * token of more than TEXT_UNITS units, a far id) are gathered into runs, and a run is decoded from
 * UTF-8 when a token with its text in its entry follows it, or at the end. The text is valid
 * UTF-8 exactly when each run is, since the tokens between runs are. The units are then narrowed
 * into a str of one byte a character, copied into one of two, or widened into one of four, as the
 * largest says.
 *
 * What this pass does not handle it leaves to decode_one's slot path, which gives the same text
 * or error: invalid UTF-8 (the errors handler), an id that is no token (the ValueError naming it),
 * a list item that is no exact int (the converter).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "common/grow.h"
#include "common/utf8.h"
#include "encode/decode.h"

#define RUN_STACK 1024 /* a run's bytes are gathered on the stack up to this many, then in a malloc'd buffer */

/* TEXT_LATIN1, TEXT_WIDE and TEXT_ASTRAL for text whose largest character is maxchar (or whose
 * characters or-ed are). */
static inline uint32_t text_flags(uint32_t maxchar) {
    return (maxchar > 0x7F ? TEXT_LATIN1 : 0) | (maxchar > 0xFF ? TEXT_WIDE : 0) | (maxchar > 0xFFFF ? TEXT_ASTRAL : 0);
}

/* The text entry of a token of len bytes: its characters when they are up to TEXT_BYTES ASCII
 * ones, its units when it is valid UTF-8 of up to TEXT_UNITS units, else TEXT_RAW and its bytes
 * if there are up to TEXT_BYTES. */
void text_entry(uint8_t *entry, const uint8_t *bytes, size_t len) {
    uint16_t units[4 * TEXT_UNITS], meta;
    uint32_t maxchar = 0;
    memset(entry, 0, 16);
    ptrdiff_t n = -1;
    if (len <= 4 * TEXT_UNITS) n = utf8_to_utf16(bytes, len, units, &maxchar); /* (at most len units) */
    if (n >= 0 && maxchar <= 0x7F && len <= TEXT_BYTES) {
        memcpy(entry, bytes, len);
        meta = (uint16_t)len | TEXT_ASCII;
    } else if (n >= 0 && n <= TEXT_UNITS) {
        memcpy(entry, units, (size_t)n * 2);
        meta = (uint16_t)((uint32_t)n | text_flags(maxchar));
    } else if (len <= TEXT_BYTES) {
        memcpy(entry, bytes, len);
        meta = (uint16_t)len | TEXT_RAW;
    } else {
        meta = TEXT_RAW; /* (its bytes are read from tok) */
    }
    memcpy(entry + 14, &meta, 2);
}

/* The units of one call: a buffer (the decoder's kept one, or malloc'd) and a run of bytes not yet
 * decoded (on the stack, or malloc'd when it outgrows it). */
typedef struct {
    TokenDecoder *d;
    uint16_t *units, *taken;
    size_t cap, k;      /* units held, and used */
    uint8_t *run, stack[RUN_STACK + 16];
    size_t run_cap, run_len;
    uint32_t flags;     /* TEXT_LATIN1, TEXT_WIDE, TEXT_ASTRAL of what is in units */
} Text;

/* Room for need more units: 0, or -1 (out of memory). */
static int units_room(Text *t, size_t need) {
    if (t->cap - t->k >= need) return 0;
    size_t want = grown_capacity(t->cap, t->k + need, 1 << 12);
    uint16_t *more = scratch_grow(t->d, SCRATCH_BYTES, t->units, t->k * 2, want * 2);
    if (!more) return -1;
    t->units = more;
    t->cap = want;
    return 0;
}

/* Append bytes (16 may be read, len kept) to the run: 0, or -1 (out of memory). */
static int run_add(Text *t, const uint8_t *bytes, size_t len, int padded) {
    if (t->run_cap - t->run_len < len + 16) {
        size_t want = grown_capacity(t->run_cap, t->run_len + len + 16, RUN_STACK);
        uint8_t *more = t->run == t->stack ? malloc(want) : realloc(t->run, want);
        if (!more) return -1;
        if (t->run == t->stack) memcpy(more, t->stack, t->run_len);
        t->run = more;
        t->run_cap = want;
    }
    if (padded) memcpy(t->run + t->run_len, bytes, 16);
    else memcpy(t->run + t->run_len, bytes, len);
    t->run_len += len;
    return 0;
}

/* Decode the run into units: 0; 1 when it is not valid UTF-8; -1 out of memory. */
static int run_flush(Text *t) {
    if (units_room(t, t->run_len + 8) < 0) return -1;
    uint32_t maxchar = 0;
    ptrdiff_t n = utf8_to_utf16(t->run, t->run_len, t->units + t->k, &maxchar);
    if (n < 0) return 1;
    t->k += (size_t)n;
    t->flags |= text_flags(maxchar);
    t->run_len = 0;
    return 0;
}

/* The 16 units at out of a kept entry (of which meta & TEXT_COUNT are its token's): its bytes
 * widened for TEXT_ASCII, else its units, chosen without a branch (the two alternate in text). */
static inline void copy_entry(uint16_t *out, const uint8_t *e, uint16_t meta) {
#ifdef __SSE2__
    static const uint16_t select[2][8] = {{0}, {0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF}};
    __m128i v = _mm_loadu_si128((const __m128i *)e), zero = _mm_setzero_si128();
    __m128i ascii = _mm_loadu_si128((const __m128i *)select[meta >> 8 & 1]);
    __m128i low = _mm_or_si128(_mm_and_si128(ascii, _mm_unpacklo_epi8(v, zero)), _mm_andnot_si128(ascii, v));
    _mm_storeu_si128((__m128i *)out, low);
    _mm_storeu_si128((__m128i *)(out + 8), _mm_unpackhi_epi8(v, zero));
#else
    if (meta & TEXT_ASCII) for (int j = 0; j < 16; j++) out[j] = e[j];
    else memcpy(out, e, 16);
#endif
}

/* The units of src's ids not skipped into t: 0; 1 for the slot path (see the top); -1 with an
 * error. The loop keeps t's units, count and flags in locals (the stores of copy_entry may alias
 * anything), and t holds them around the calls that change them. Needs the GIL (a list's ints). */
static inline __attribute__((always_inline)) int ids_to_units_(Text *t, const IdSource *src, const uint8_t *skip,
                                                                const int skipping) {
    const TokenDecoder *d = t->d;
    const uint8_t *text = d->text;
    uint64_t dense = (uint64_t)d->dense, ids[ID_BLOCK];
    uint16_t *units = t->units;
    size_t k = t->k, room = t->cap;
    uint32_t flags = 0;
    int status = 0;
#define TEXT_SAVE() (t->k = k, t->flags |= flags, flags = 0)
#define TEXT_LOAD() (units = t->units, k = t->k, room = t->cap)
    for (Py_ssize_t from = 0; from < src->n; from += ID_BLOCK) {
        Py_ssize_t n = src->n - from < ID_BLOCK ? src->n - from : ID_BLOCK;
        if (ids_read_block(d, src, from, n, ids) < 0) return 1;
        if (room - k < (size_t)n * 16) {
            TEXT_SAVE();
            if (units_room(t, (size_t)n * 16) < 0) goto no_memory;
            TEXT_LOAD();
        }
        for (Py_ssize_t j = 0; j < n; j++) {
            uint64_t id = ids[j];
            if (id < dense) {
                const uint8_t *e = text + id * 16;
                uint16_t meta;
                memcpy(&meta, e + 14, 2);
                if (skipping && skip[id]) continue;
                if (!(meta & TEXT_RAW)) { /* (room for 16 units an id of the block is kept) */
                    if (t->run_len) {
                        TEXT_SAVE();
                        if ((status = run_flush(t)) || (status = units_room(t, (size_t)(n - j) * 16))) goto failed;
                        TEXT_LOAD();
                    }
                    copy_entry(units + k, e, meta);
                    k += meta & TEXT_COUNT;
                    flags |= meta;
                    continue;
                }
                if (meta != TEXT_NONE && (meta & TEXT_COUNT)) {
                    if (run_add(t, e, meta & TEXT_COUNT, 1) < 0) goto no_memory;
                    continue;
                }
            }
            Py_ssize_t slot = decode_slot(d, id);
            if (slot < 0) return 1;
            if (skipping && skip[slot]) continue;
            if (run_add(t, tok_bytes(d, d->tok[slot]), tok_len(d->tok[slot]), 0) < 0) goto no_memory;
        }
    }
    TEXT_SAVE();
    if (t->run_len && (status = run_flush(t))) goto failed;
    t->flags &= TEXT_LATIN1 | TEXT_WIDE | TEXT_ASTRAL;
    return 0;
#undef TEXT_SAVE
#undef TEXT_LOAD
failed:
    if (status > 0) return 1;
no_memory:
    PyErr_NoMemory();
    return -1;
}

static int ids_to_units(Text *t, const IdSource *src, const uint8_t *skip) {
    return skip ? ids_to_units_(t, src, skip, 1) : ids_to_units_(t, src, NULL, 0);
}

/* The str of UTF-16 units[0:k] whose characters flags describes. */
static PyObject *units_to_str(const uint16_t *units, size_t k, uint32_t flags) {
    PyObject *text;
    if (!(flags & TEXT_WIDE)) {
        if (!(text = PyUnicode_New((Py_ssize_t)k, flags & TEXT_LATIN1 ? 0xFF : 0x7F))) return NULL;
        uint8_t *out = PyUnicode_DATA(text);
        for (size_t i = 0; i < k; i++) out[i] = (uint8_t)units[i];
    } else if (!(flags & TEXT_ASTRAL)) {
        if ((text = PyUnicode_New((Py_ssize_t)k, 0xFFFF))) memcpy(PyUnicode_DATA(text), units, k * 2);
    } else {
        size_t pairs = 0;
        for (size_t i = 0; i < k; i++) pairs += (units[i] & 0xFC00) == 0xD800;
        if (!(text = PyUnicode_New((Py_ssize_t)(k - pairs), 0x10FFFF))) return NULL;
        uint32_t *out = PyUnicode_DATA(text);
        size_t i = 0, o = 0;
        while (i < k) {
#ifdef __SSE2__
            if (i + 8 <= k) { /* (8 units at a time while none is a surrogate) */
                __m128i v = _mm_loadu_si128((const __m128i *)(units + i));
                __m128i surrogate = _mm_cmpeq_epi16(_mm_and_si128(v, _mm_set1_epi16((short)0xF800)),
                                                    _mm_set1_epi16((short)0xD800));
                if (!_mm_movemask_epi8(surrogate)) {
                    _mm_storeu_si128((__m128i *)(out + o), _mm_unpacklo_epi16(v, _mm_setzero_si128()));
                    _mm_storeu_si128((__m128i *)(out + o + 4), _mm_unpackhi_epi16(v, _mm_setzero_si128()));
                    i += 8;
                    o += 8;
                    continue;
                }
            }
#endif
            uint32_t c = units[i++];
            if ((c & 0xFC00) == 0xD800) c = 0x10000 + ((c - 0xD800) << 10) + (units[i++] - 0xDC00u);
            out[o++] = c;
        }
    }
    return text;
}

/* The text of a list, tuple or buffer of ids in one pass; NULL with an error, or NULL and no error
 * for decode_one's slot path. */
PyObject *ids_to_text(TokenDecoder *d, PyObject *ids, const uint8_t *skip) {
    IdSource src;
    if (ids_open(d, ids, &src) < 0) return NULL;
    Text t = {.d = d, .cap = (size_t)src.n * 4 + 64}; /* (a guess: tokens average 2 to 4 characters) */
    t.run = t.stack;
    t.run_cap = sizeof t.stack;
    t.units = t.taken = scratch_take(d, SCRATCH_BYTES, t.cap * 2);
    PyObject *result = NULL;
    if (!t.units) PyErr_NoMemory();
    else if (ids_to_units(&t, &src, skip) == 0) result = units_to_str(t.units, t.k, t.flags);
    if (t.run != t.stack) free(t.run);
    scratch_done(d, SCRATCH_BYTES, t.taken, t.units);
    ids_close(&src);
    return result;
}
