/*
 * Split text into chunks with the GPT-2, GPT-4 (cl100k), o200k or Llama 3 pattern, in C: the same chunks as
 * regex.findall(pattern, text) (tests check it), several times faster. Used by patterns.py;
 * any other pattern goes to the regex module.
 *
 * Character classes come from the regex module itself (patterns.py builds the table once per
 * process with set_classes), so \p{L}, \p{N} and \s mean exactly what they mean there.
 *
 * GPT-4: '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+
 *        |\s++$|\s*[\r\n]|\s+(?!\S)|\s
 * GPT-2: '(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s
 * o200k: X?U*W+C?|X?U+W*C?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+ where
 *        X = [^\r\n\p{L}\p{N}], U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], W = [\p{Ll}\p{Lm}\p{Lo}\p{M}]
 *        and C = (?i:'s|'t|'re|'ve|'m|'ll|'d); backtracking as the regex module does it.
 * Llama 3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*
 *        |\s*[\r\n]+|\s+(?!\S)|\s+: GPT-4's alternatives up to the whitespace (its possessive
 *        quantifiers change nothing there), then o200k's whitespace alternatives.
 * At each position the first alternative that matches wins (the regex module's alternation);
 * every character matches some alternative, so the chunks cover the text.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "_pretokenize.h"

#define LETTER 1
#define NUMBER 2
#define SPACE 4
#define UPPERISH 8  /* [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] of the o200k pattern */
#define LOWERISH 16 /* [\p{Ll}\p{Lm}\p{Lo}\p{M}] */
#define NCODEPOINTS 0x110000

static uint8_t *classes = NULL; /* per code point: the bits above */

typedef PretokText Text;

static inline Py_UCS4 at(const Text *t, Py_ssize_t i) { return PyUnicode_READ(t->kind, t->data, i); }
static inline int cls(const Text *t, Py_ssize_t i) { return classes[at(t, i)]; }
static inline int is_letter(const Text *t, Py_ssize_t i) { return i < t->n && (cls(t, i) & LETTER); }
static inline int is_number(const Text *t, Py_ssize_t i) { return i < t->n && (cls(t, i) & NUMBER); }
static inline int is_space(const Text *t, Py_ssize_t i) { return i < t->n && (cls(t, i) & SPACE); }
/* [^\s\p{L}\p{N}] */
static inline int is_other(const Text *t, Py_ssize_t i) { return i < t->n && !(cls(t, i) & (LETTER | NUMBER | SPACE)); }
static inline int is_newline(const Text *t, Py_ssize_t i) {
    if (i >= t->n) return 0;
    Py_UCS4 c = at(t, i);
    return c == '\r' || c == '\n';
}

/* Length of the contraction at i ("'s", "'ll"...), or 0: '[sdmt]|'ll|'ve|'re, which is also
 * o200k's 's|'t|'re|'ve|'m|'ll|'d (no contraction is a prefix of another, so order does not
 * matter). With ignore_case, (?i) as the regex module applies it to these letters: ASCII case,
 * and U+017F (long s) for s. */
static Py_ssize_t contraction(const Text *t, Py_ssize_t i, int ignore_case) {
    if (i + 1 >= t->n || at(t, i) != '\'') return 0;
    Py_UCS4 c = at(t, i + 1);
    if (ignore_case && c < 128) c = (Py_UCS4)Py_TOLOWER(c);
    if (ignore_case && c == 0x17F) c = 's';
    if (c == 's' || c == 'd' || c == 'm' || c == 't') return 2;
    if (i + 2 >= t->n) return 0;
    Py_UCS4 d = at(t, i + 2);
    if (ignore_case && d < 128) d = (Py_UCS4)Py_TOLOWER(d);
    if ((c == 'l' && d == 'l') || (c == 'v' && d == 'e') || (c == 'r' && d == 'e')) return 3;
    return 0;
}

/* The whitespace alternatives of the GPT-2 and GPT-4 patterns (o200k and Llama 3 have
 * their own, spaces_to_last_newline), at a space i: \s++$ | (GPT-4 only: \s*[\r\n]) | \s+(?!\S) | \s */
static Py_ssize_t spaces(const Text *t, Py_ssize_t i, int newline_alternative) {
    Py_ssize_t j = i;
    while (is_space(t, j)) j++;
    if (j == t->n) return j - i;                 /* \s++$ */
    if (newline_alternative) {                   /* \s*[\r\n]: up to the run's last line break */
        for (Py_ssize_t k = j - 1; k >= i; k--)
            if (is_newline(t, k)) return k + 1 - i;
    }
    if (j - i >= 2) return j - 1 - i;            /* \s+(?!\S): leave one space for the next chunk */
    return 1;                                    /* \s */
}

/* \s*[\r\n]+ | \s+(?!\S) | \s+ at a space i: the whitespace alternatives of o200k and Llama 3 */
static Py_ssize_t spaces_to_last_newline(const Text *t, Py_ssize_t i) {
    Py_ssize_t j = i;
    while (is_space(t, j)) j++;
    for (Py_ssize_t k = j - 1; k >= i; k--)
        if (is_newline(t, k)) return k + 1 - i;
    if (j < t->n && j - i >= 2) return j - 1 - i;
    return j - i;
}

/* GPT-4's pattern, or with llama3 Llama 3's (which differs only in its whitespace alternatives). */
static inline Py_ssize_t chunk_gpt4_or_llama3(const Text *t, Py_ssize_t i, int llama3) {
    Py_ssize_t len = contraction(t, i, 1);
    if (len) return len;
    /* [^\r\n\p{L}\p{N}]?+\p{L}++ */
    Py_ssize_t j = i;
    if (!is_letter(t, j) && !is_number(t, j) && !is_newline(t, j)) j++;
    if (is_letter(t, j)) {
        while (is_letter(t, j)) j++;
        return j - i;
    }
    /* \p{N}{1,3}+ */
    if (is_number(t, i)) {
        j = i + 1;
        while (j < i + 3 && is_number(t, j)) j++;
        return j - i;
    }
    /* ' ?[^\s\p{L}\p{N}]++[\r\n]*+' */
    j = (at(t, i) == ' ' && is_other(t, i + 1)) ? i + 1 : i;
    if (is_other(t, j)) {
        while (is_other(t, j)) j++;
        while (is_newline(t, j)) j++;
        return j - i;
    }
    return llama3 ? spaces_to_last_newline(t, i) : spaces(t, i, 1);
}

static Py_ssize_t chunk_gpt4(const Text *t, Py_ssize_t i) { return chunk_gpt4_or_llama3(t, i, 0); }
static Py_ssize_t chunk_llama3(const Text *t, Py_ssize_t i) { return chunk_gpt4_or_llama3(t, i, 1); }

static Py_ssize_t chunk_gpt2(const Text *t, Py_ssize_t i) {
    Py_ssize_t len = contraction(t, i, 0);
    if (len) return len;
    /* ' ?\p{L}++' | ' ?\p{N}++' | ' ?[^\s\p{L}\p{N}]++': a space joins the run after it */
    Py_ssize_t start = (at(t, i) == ' ' && i + 1 < t->n && !is_space(t, i + 1)) ? i + 1 : i;
    int c = cls(t, start);
    if (!(c & SPACE)) {
        int kind = c & (LETTER | NUMBER); /* 0: the "other" class */
        Py_ssize_t j = start + 1;
        while (j < t->n && (cls(t, j) & (LETTER | NUMBER | SPACE)) == kind) j++;
        return j - i;
    }
    return spaces(t, i, 0);
}

static inline int has(const Text *t, Py_ssize_t i, int bits) { return i < t->n && (cls(t, i) & bits); }

/* The end of U*W+ from p (greedy U*, giving back characters until W+ can start), or -1. */
static Py_ssize_t upper_then_lower(const Text *t, Py_ssize_t p) {
    Py_ssize_t q = p;
    while (has(t, q, UPPERISH)) q++;
    for (Py_ssize_t r = q; r >= p; r--) {
        if (has(t, r, LOWERISH)) {
            Py_ssize_t s = r;
            while (has(t, s, LOWERISH)) s++;
            return s;
        }
    }
    return -1;
}

static Py_ssize_t chunk_o200k(const Text *t, Py_ssize_t i) {
    /* X is [^\r\n\p{L}\p{N}]: marks belong to it and to U and W alike */
    int x_here = !has(t, i, LETTER | NUMBER) && !is_newline(t, i);
    /* X?U*W+C?, trying X first */
    for (int take_x = x_here; take_x >= 0; take_x--) {
        Py_ssize_t end = upper_then_lower(t, i + take_x);
        if (end >= 0) return end + contraction(t, end, 1) - i;
    }
    /* X?U+W*C? */
    for (int take_x = x_here; take_x >= 0; take_x--) {
        Py_ssize_t q = i + take_x;
        if (!has(t, q, UPPERISH)) continue;
        while (has(t, q, UPPERISH)) q++;
        while (has(t, q, LOWERISH)) q++;
        return q + contraction(t, q, 1) - i;
    }
    /* \p{N}{1,3} */
    if (is_number(t, i)) {
        Py_ssize_t j = i + 1;
        while (j < i + 3 && is_number(t, j)) j++;
        return j - i;
    }
    /* ' ?[^\s\p{L}\p{N}]+[\r\n/]*' */
    Py_ssize_t j = (at(t, i) == ' ' && is_other(t, i + 1)) ? i + 1 : i;
    if (is_other(t, j)) {
        while (is_other(t, j)) j++;
        while (j < t->n && (is_newline(t, j) || at(t, j) == '/')) j++;
        return j - i;
    }
    return spaces_to_last_newline(t, i);
}

static PyObject *split(PyObject *args, Py_ssize_t (*chunk)(const Text *, Py_ssize_t)) {
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U", &text)) return NULL;
    if (classes == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "set_classes() must be called first");
        return NULL;
    }
    Text t = {PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text)};
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < t.n;) {
        Py_ssize_t len = chunk(&t, i);
        PyObject *piece = PyUnicode_Substring(text, i, i + len);
        if (piece == NULL || PyList_Append(out, piece) < 0) {
            Py_XDECREF(piece);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(piece);
        i += len;
    }
    return out;
}

static PyObject *split_gpt4(PyObject *self, PyObject *args) { return split(args, chunk_gpt4); }
static PyObject *split_gpt2(PyObject *self, PyObject *args) { return split(args, chunk_gpt2); }
static PyObject *split_o200k(PyObject *self, PyObject *args) { return split(args, chunk_o200k); }
static PyObject *split_llama3(PyObject *self, PyObject *args) { return split(args, chunk_llama3); }

static PyObject *set_classes(PyObject *self, PyObject *args) {
    Py_buffer table;
    if (!PyArg_ParseTuple(args, "y*", &table)) return NULL;
    if (table.len != NCODEPOINTS) {
        PyBuffer_Release(&table);
        PyErr_SetString(PyExc_ValueError, "the class table needs one byte per code point (0x110000)");
        return NULL;
    }
    uint8_t *copy = PyMem_RawMalloc(NCODEPOINTS);
    if (copy == NULL) {
        PyBuffer_Release(&table);
        return PyErr_NoMemory();
    }
    memcpy(copy, table.buf, NCODEPOINTS);
    PyBuffer_Release(&table);
    PyMem_RawFree(classes);
    classes = copy;
    Py_RETURN_NONE;
}

#define NSCANNERS 4
static const PretokScanner scanners[NSCANNERS] = {
    {chunk_gpt2, &classes}, {chunk_gpt4, &classes}, {chunk_o200k, &classes}, {chunk_llama3, &classes}};
static const char *scanner_names[NSCANNERS] = {"scanner_gpt2", "scanner_gpt4", "scanner_o200k", "scanner_llama3"};

static PyMethodDef methods[] = {
    {"set_classes", set_classes, METH_VARARGS, "Set the class bits of every code point (see the top of _pretokenize.c)."},
    {"split_gpt4", split_gpt4, METH_VARARGS, "regex.findall(GPT4_SPLIT_PATTERN, text), in C."},
    {"split_gpt2", split_gpt2, METH_VARARGS, "regex.findall(GPT2_SPLIT_PATTERN, text), in C."},
    {"split_o200k", split_o200k, METH_VARARGS, "regex.findall(O200K_SPLIT_PATTERN, text), in C."},
    {"split_llama3", split_llama3, METH_VARARGS, "regex.findall(LLAMA3_SPLIT_PATTERN, text), in C."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_pretokenize", NULL, -1, methods};

PyMODINIT_FUNC PyInit__pretokenize(void) {
    PyObject *m = PyModule_Create(&module);
    for (int k = 0; m && k < NSCANNERS; k++) {
        PyObject *capsule = PyCapsule_New((void *)&scanners[k], PRETOK_CAPSULE_NAME, NULL);
        if (!capsule || PyModule_AddObject(m, scanner_names[k], capsule) < 0) {
            Py_XDECREF(capsule);
            Py_CLEAR(m);
        }
    }
    return m;
}
