/*
 * The Python side of _pretokenize: split_* (a str's chunks as strs), chunk_ends (for tests),
 * set_classes, wide_windows, and the module with one capsule per scanner (see scanners.c).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "scan/scan.h"

static int check_classes(void) {
    if (scan_has_classes()) return 0;
    PyErr_SetString(PyExc_RuntimeError, "set_classes() must be called first");
    return -1;
}

#define BATCH 64 /* chunk ends asked of a scanner at a time */

static PyObject *split(PyObject *args, const PretokScanner *scanner) {
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U", &text) || check_classes() < 0) return NULL;
    PretokText t = {PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text)};
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    Py_ssize_t ends[BATCH];
    for (Py_ssize_t i = 0; i < t.n;) {
        Py_ssize_t count = scanner->chunks(&t, i, ends, BATCH);
        for (Py_ssize_t k = 0; k < count; i = ends[k++]) {
            PyObject *piece = PyUnicode_Substring(text, i, ends[k]);
            if (piece == NULL || PyList_Append(out, piece) < 0) {
                Py_XDECREF(piece);
                Py_DECREF(out);
                return NULL;
            }
            Py_DECREF(piece);
        }
    }
    return out;
}

static const char *scanner_names[NSCANNERS] = {"scanner_gpt2", "scanner_gpt4", "scanner_o200k", "scanner_llama3",
                                                "scanner_qwen2", "scanner_tekken", "scanner_superbpe_stage1",
                                                "scanner_superbpe_stage2"};

static PyObject *split_gpt2(PyObject *self, PyObject *args) { return split(args, &scan_scanners[0]); }
static PyObject *split_gpt4(PyObject *self, PyObject *args) { return split(args, &scan_scanners[1]); }
static PyObject *split_o200k(PyObject *self, PyObject *args) { return split(args, &scan_scanners[2]); }
static PyObject *split_llama3(PyObject *self, PyObject *args) { return split(args, &scan_scanners[3]); }
static PyObject *split_qwen2(PyObject *self, PyObject *args) { return split(args, &scan_scanners[4]); }
static PyObject *split_tekken(PyObject *self, PyObject *args) { return split(args, &scan_scanners[5]); }
static PyObject *split_superbpe_stage1(PyObject *self, PyObject *args) { return split(args, &scan_scanners[6]); }
static PyObject *split_superbpe_stage2(PyObject *self, PyObject *args) { return split(args, &scan_scanners[7]); }

/* chunk_ends(scanner, text, max, utf8=False): the end of every chunk of text, from the scanner's
 * chunks() asked for max ends at a time, or from its chunk() with max 0; with utf8, of the text's
 * UTF-8 (ends in bytes). For tests: all give the same chunks. */
static PyObject *chunk_ends(PyObject *self, PyObject *args) {
    PyObject *capsule, *text;
    Py_ssize_t max;
    int utf8 = 0;
    if (!PyArg_ParseTuple(args, "OUn|p", &capsule, &text, &max, &utf8) || check_classes() < 0) return NULL;
    const PretokScanner *scanner = PyCapsule_GetPointer(capsule, PRETOK_CAPSULE_NAME);
    if (scanner == NULL) return NULL;
    if (max < 0) return PyErr_Format(PyExc_ValueError, "max must be >= 0, not %zd", max);
    PretokText t = {PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text)};
    if (utf8) {
        t.kind = PRETOK_UTF8_KIND;
        if ((t.data = PyUnicode_AsUTF8AndSize(text, &t.n)) == NULL) return NULL;
    }
    Py_ssize_t *ends = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(max ? max : 1));
    PyObject *out = PyList_New(0);
    if (ends == NULL || out == NULL) {
        PyMem_Free(ends);
        Py_XDECREF(out);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < t.n;) {
        Py_ssize_t count = max ? scanner->chunks(&t, i, ends, max) : (ends[0] = i + scanner->chunk(&t, i), 1);
        if (count < 1 || count > (max ? max : 1) || (count < max && ends[count - 1] != t.n)) {
            PyErr_Format(PyExc_AssertionError, "chunks() returned %zd ends at %zd", count, i);
            Py_CLEAR(out);
            break;
        }
        for (Py_ssize_t k = 0; k < count; i = ends[k++]) {
            PyObject *end = PyLong_FromSsize_t(ends[k]);
            if (end == NULL || PyList_Append(out, end) < 0) {
                Py_XDECREF(end);
                Py_CLEAR(out);
                break;
            }
            Py_DECREF(end);
        }
        if (out == NULL) break;
    }
    PyMem_Free(ends);
    return out;
}

static PyObject *set_classes(PyObject *self, PyObject *args) {
    Py_buffer table;
    if (!PyArg_ParseTuple(args, "y*", &table)) return NULL;
    if (scan_has_classes()) { /* set once: encodes running without the GIL may be reading it */
        PyBuffer_Release(&table);
        Py_RETURN_NONE;
    }
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
    scan_set_classes(copy);
    Py_RETURN_NONE;
}

static PyObject *set_wide_windows(PyObject *self, PyObject *args) {
    int on = -1;
    if (!PyArg_ParseTuple(args, "|p:wide_windows", &on)) return NULL;
    return PyBool_FromLong(scan_wide_windows(on));
}

static PyMethodDef methods[] = {
    {"set_classes", set_classes, METH_VARARGS, "Set the class bits of every code point (see the top of csrc/scan/); later calls change nothing."},
    {"split_gpt4", split_gpt4, METH_VARARGS, "regex.findall(GPT4_SPLIT_PATTERN, text), in C."},
    {"split_gpt2", split_gpt2, METH_VARARGS, "regex.findall(GPT2_SPLIT_PATTERN, text), in C."},
    {"split_o200k", split_o200k, METH_VARARGS, "regex.findall(O200K_SPLIT_PATTERN, text), in C."},
    {"split_llama3", split_llama3, METH_VARARGS, "regex.findall(LLAMA3_SPLIT_PATTERN, text), in C."},
    {"split_qwen2", split_qwen2, METH_VARARGS, "regex.findall(QWEN2_SPLIT_PATTERN, text), in C."},
    {"split_tekken", split_tekken, METH_VARARGS, "regex.findall(TEKKEN_SPLIT_PATTERN, text), in C."},
    {"split_superbpe_stage1", split_superbpe_stage1, METH_VARARGS, "regex.findall(SUPERBPE_STAGE1_SPLIT_PATTERN, text), in C."},
    {"split_superbpe_stage2", split_superbpe_stage2, METH_VARARGS,
     "The pieces of tokenizers' Split(SUPERBPE_STAGE2_SPLIT_PATTERN, 'isolated'): its matches and the text between them, in C."},
    {"wide_windows", set_wide_windows, METH_VARARGS,
     "wide_windows(on=None): whether UTF-8 text is scanned with the AVX-512 window scanners (the default where the "
     "CPU has AVX-512 BW and HF_BBPE_NO_AVX512 is not set; else SSE2); on=False / True switches (True only where "
     "the CPU has it); for tests, not "
     "while another thread encodes."},
    {"chunk_ends", chunk_ends, METH_VARARGS,
     "chunk_ends(scanner, text, max, utf8=False): chunk end positions from chunks() (max at a time) or chunk() (max 0), "
     "of text's code points or (utf8) of its UTF-8 bytes; for tests."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_pretokenize", NULL, -1, methods};

PyMODINIT_FUNC PyInit__pretokenize(void) {
    scan_wide_windows(1);
    PyObject *m = PyModule_Create(&module);
    for (int k = 0; m && k < NSCANNERS; k++) {
        PyObject *capsule = PyCapsule_New((void *)&scan_scanners[k], PRETOK_CAPSULE_NAME, NULL);
        if (!capsule || PyModule_AddObject(m, scanner_names[k], capsule) < 0) {
            Py_XDECREF(capsule);
            Py_CLEAR(m);
        }
    }
    return m;
}
