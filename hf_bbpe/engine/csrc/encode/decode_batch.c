/*
 * Decoding a batch of sequences on threads. Holding the GIL, every sequence's ids are read into
 * one array of slots (a list's ints need it), which gives each one's size. Then, without it, the
 * threads copy the tokens' bytes (into each sequence's bytes object, or one buffer for text)
 * and check each text's UTF-8 (utf8_measure: its characters and the largest); holding the GIL
 * again, a str of that size is made for each valid text (Python's codec decodes an invalid one,
 * with the errors handler); then, without it, the threads write the characters into the strs.
 * Threads take a few sequences at a time from an atomic cursor, so that a thread slowed by
 * another process does less of the work.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/threads.h"
#include "common/utf8.h"
#include "encode/decode.h"

#define BATCH_TAKE 8                                /* sequences a thread takes at a time */
#define BATCH_THREAD_MIN_BYTES ((size_t)1 << 17)    /* less output than this in all: one thread */
#define BATCH_UNLOCKED_MIN_BYTES ((size_t)1 << 14)  /* less than this: the GIL is kept */
#define DECODE_MAX_THREADS 64

enum { PHASE_COPY, PHASE_FILL };

typedef struct {
    const TokenDecoder *d;
    const int32_t *slots;
    const Py_ssize_t *ends;  /* sequence k's slots: [ends[k - 1] or 0, ends[k]) */
    const size_t *bytes_at;  /* sequence k's bytes: [bytes_at[k], bytes_at[k + 1]) of buf */
    uint8_t *buf;            /* text: every sequence's bytes; NULL: bytes, each into outs[k] */
    char **outs;             /* bytes: each sequence's object's data */
    ptrdiff_t *chars;        /* text: each sequence's characters, -1: not valid UTF-8 */
    uint32_t *maxchar;
    PyObject **strs;         /* text, PHASE_FILL: each valid sequence's str, to fill */
    Py_ssize_t count, next;
    int phase;
} BatchWork;

static void work_on(BatchWork *w, Py_ssize_t k) {
    size_t size = w->bytes_at[k + 1] - w->bytes_at[k];
    Py_ssize_t first = k ? w->ends[k - 1] : 0, n = w->ends[k] - first;
    if (w->phase == PHASE_FILL) {
        PyObject *s = w->strs[k];
        if (w->chars[k] < 0) return; /* (Python's codec made it) */
        if (PyUnicode_KIND(s) == PyUnicode_1BYTE_KIND && !w->maxchar[k]) memcpy(PyUnicode_DATA(s), w->buf + w->bytes_at[k], size);
        else utf8_fill(w->buf + w->bytes_at[k], size, PyUnicode_DATA(s), PyUnicode_KIND(s));
        return;
    }
    if (!w->buf) {
        slots_copy(w->d, w->slots + first, n, (uint8_t *)w->outs[k], size);
        return;
    }
    uint8_t *out = w->buf + w->bytes_at[k];
    slots_copy(w->d, w->slots + first, n, out, size); /* (up to its own end: threads write the next ones) */
    w->chars[k] = utf8_measure(out, size, &w->maxchar[k]);
}

static void *batch_worker(void *arg) {
    BatchWork *w = arg;
    for (;;) {
        Py_ssize_t k = ATOMIC_ADD(&w->next, BATCH_TAKE);
        if (k >= w->count) break;
        Py_ssize_t end = k + BATCH_TAKE < w->count ? k + BATCH_TAKE : w->count;
        for (; k < end; k++) work_on(w, k);
    }
    return NULL;
}

/* Run w's phase over every sequence on up to num_threads threads (the calling one too). */
static void run_phase(BatchWork *w, int num_threads, size_t total) {
    w->next = 0;
    if (total < BATCH_UNLOCKED_MIN_BYTES) {
        batch_worker(w);
        return;
    }
    Py_BEGIN_ALLOW_THREADS
    if (num_threads > 1 && total >= BATCH_THREAD_MIN_BYTES && HAVE_THREADS) {
        Threads threads; /* (none to be had: the calling thread does it all) */
        int started = threads_start(&threads, batch_worker, w, 0, 1, num_threads) == 0;
        batch_worker(w);
        if (started) threads_join(&threads, 0);
    } else {
        batch_worker(w);
    }
    Py_END_ALLOW_THREADS
}

/* decode_batch (as_str) or decode_bytes_batch of the list batch. */
static PyObject *decode_many(TokenDecoder *self, PyObject *batch, const char *errors, PyObject *mask, int num_threads,
                             int as_str) {
    const uint8_t *skip;
    if (!PyList_Check(batch)) {
        PyErr_SetString(PyExc_TypeError, "batch must be a list of sequences of ids");
        return NULL;
    }
    if (skip_of(self, mask, &skip) < 0) return NULL;
    if (num_threads < 1) num_threads = 1;
    if (num_threads > DECODE_MAX_THREADS) num_threads = DECODE_MAX_THREADS;
    Py_ssize_t count = PyList_GET_SIZE(batch), cap = 0, len = 0;
    int32_t *slots = NULL;
    Py_ssize_t *ends = malloc((size_t)(count + 1) * sizeof(Py_ssize_t));
    size_t *bytes_at = malloc((size_t)(count + 1) * sizeof(size_t));
    ptrdiff_t *chars = as_str ? malloc((size_t)(count + 1) * sizeof(ptrdiff_t)) : NULL;
    uint32_t *maxchar = as_str ? calloc((size_t)(count + 1), sizeof(uint32_t)) : NULL;
    PyObject **items = calloc((size_t)(count + 1), sizeof(PyObject *));
    char **outs = as_str ? NULL : malloc((size_t)(count + 1) * sizeof(char *));
    uint8_t *buf = NULL;
    PyObject *result = NULL;
    if (!ends || !bytes_at || !items || (as_str && (!chars || !maxchar)) || (!as_str && !outs)) {
        PyErr_NoMemory();
        goto done;
    }
    size_t total = 0;
    for (Py_ssize_t k = 0; k < count; k++) {
        bytes_at[k] = total;
        uint64_t flags = 0;
        if (read_slots(self, PyList_GET_ITEM(batch, k), skip, &slots, &cap, &len, &total, &flags, k) < 0) goto done;
        ends[k] = len;
    }
    bytes_at[count] = total;
    BatchWork work = {self, slots, ends, bytes_at, NULL, outs, chars, maxchar, items, count, 0, PHASE_COPY};
    if (!as_str) {
        for (Py_ssize_t k = 0; k < count; k++) {
            if (!(items[k] = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(bytes_at[k + 1] - bytes_at[k])))) goto done;
            outs[k] = PyBytes_AS_STRING(items[k]);
        }
        run_phase(&work, num_threads, total);
    } else {
        if (!(buf = malloc(total + DECODE_PAD))) {
            PyErr_NoMemory();
            goto done;
        }
        work.buf = buf;
        run_phase(&work, num_threads, total);
        for (Py_ssize_t k = 0; k < count; k++) {
            if (chars[k] >= 0) {
                if (!(items[k] = PyUnicode_New(chars[k], maxchar[k]))) goto done;
                continue;
            }
            if (!(items[k] = decode_utf8(buf + bytes_at[k], bytes_at[k + 1] - bytes_at[k], errors))) goto done;
        }
        work.phase = PHASE_FILL;
        run_phase(&work, num_threads, total);
    }
    if (!(result = PyList_New(count))) goto done;
    for (Py_ssize_t k = 0; k < count; k++) {
        PyList_SET_ITEM(result, k, items[k]);
        items[k] = NULL;
    }
done:
    for (Py_ssize_t k = 0; items && k < count; k++) Py_XDECREF(items[k]);
    free(items); free(slots); free(ends); free(bytes_at); free(chars); free(maxchar); free(outs); free(buf);
    return result;
}

static int threads_of(PyObject *arg, int *num_threads) {
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) return -1;
    *num_threads = v < 1 ? 1 : v > DECODE_MAX_THREADS ? DECODE_MAX_THREADS : (int)v;
    return 0;
}

PyObject *TokenDecoder_decode_bytes_batch(TokenDecoder *self, PyObject *const *args, Py_ssize_t nargs) {
    int num_threads = 1;
    if (nargs < 1 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "decode_bytes_batch(batch, skip=None, num_threads=1)");
        return NULL;
    }
    if (nargs > 2 && threads_of(args[2], &num_threads) < 0) return NULL;
    return decode_many(self, args[0], NULL, nargs > 1 ? args[1] : Py_None, num_threads, 0);
}

PyObject *TokenDecoder_decode_batch(TokenDecoder *self, PyObject *const *args, Py_ssize_t nargs) {
    int num_threads = 1;
    const char *errors;
    if (nargs < 1 || nargs > 4) {
        PyErr_SetString(PyExc_TypeError, "decode_batch(batch, errors='replace', skip=None, num_threads=1)");
        return NULL;
    }
    if (errors_of(args, nargs, 1, &errors) < 0 || (nargs > 3 && threads_of(args[3], &num_threads) < 0)) return NULL;
    return decode_many(self, args[0], errors, nargs > 2 ? args[2] : Py_None, num_threads, 1);
}
