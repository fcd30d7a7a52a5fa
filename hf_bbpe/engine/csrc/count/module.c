/*
 * The Python side of _chunk_count that is not counting: the counter's spilling calls, memory,
 * the Counter type, part_bytes, first_bad_record, and the module.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "count/count.h"
#include "count/json.h"
#include "count/spill.h"
#include "count/table.h"

/* ------------------------------------------------------------------------------------------ */
/* The counter's spilling (see Spill)                                                          */

static uint64_t tables_bytes(Counter *self) {
    uint64_t total = 0;
    for (int t = 0; self->tables && t < self->ntables; t++)
        total += (self->tables[t].mask + 1) * 8 + self->tables[t].cap;
    return total;
}

/* Every table's records to disk (the caller's thread, between calls). -1 when that fails. */
static int spill_all(Counter *self) {
    for (int t = 0; t < self->ntables; t++)
        if (table_spill(&self->tables[t], NULL) < 0) return -1;
    return 0;
}

/* After a call: with a spill folder, all the tables to disk when together they hold more than the
 * limit. 0, or -1 with an exception set. */
int after_call(Counter *self) {
    if (!self->spill) return 0;
    int status = 0;
    if (!self->spill->error && tables_bytes(self) > self->spill->limit) {
        Py_BEGIN_ALLOW_THREADS
        status = spill_all(self);
        Py_END_ALLOW_THREADS
    }
    if (status < 0 || self->spill->error) {
        self->broken = 1;
        errno = self->spill->error;
        PyErr_SetFromErrnoWithFilename(PyExc_OSError, self->spill->dir);
        return -1;
    }
    return 0;
}

/* A failure to spill during a call: an OSError naming the spill folder (1), or 0. */
int spill_failed(Counter *self) {
    if (!self->spill || !self->spill->error) return 0;
    self->broken = 1;
    PyErr_Clear();
    errno = self->spill->error;
    PyErr_SetFromErrnoWithFilename(PyExc_OSError, self->spill->dir);
    return 1;
}

static PyObject *Counter_spill_to(Counter *self, PyObject *args) {
    PyObject *dir;
    unsigned long long limit, table_limit;
    if (!PyArg_ParseTuple(args, "O&KK", PyUnicode_FSConverter, &dir, &limit, &table_limit)) return NULL;
    if (check_usable(self) < 0 || self->spill) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "this counter spills already");
        Py_DECREF(dir);
        return NULL;
    }
#if !HAVE_THREADS
    Py_DECREF(dir);
    PyErr_SetString(PyExc_NotImplementedError, "spilling counts to disk needs POSIX threads and files");
    return NULL;
#else
    Spill *s = calloc(1, sizeof(Spill));
    if (s) s->dir = strdup(PyBytes_AS_STRING(dir));
    Py_DECREF(dir);
    if (!s || !s->dir) {
        free(s);
        return PyErr_NoMemory();
    }
    s->limit = limit ? limit : 1;
    self->spill = s;
    for (int k = 0; k < self->ntables; k++) {
        Table *t = &self->tables[k];
        if (k < self->nthreads && !t->records && !t->nsegs) { /* (an unused thread table: sized for its limit) */
            table_free(t);
            if (table_init_limited(t, table_limit ? table_limit : 1, s) < 0) {
                self->broken = 1;
                return PyErr_NoMemory();
            }
        }
        t->spill = s;
        if (k < self->nthreads) t->limit = table_limit ? table_limit : 1;
    }
    Py_RETURN_NONE;
#endif
}

#if HAVE_THREADS
static PyObject *Counter_merge_spills(Counter *self, PyObject *unused) {
    if (check_usable(self) < 0) return NULL;
    if (!self->spill) {
        PyErr_SetString(PyExc_RuntimeError, "this counter does not spill (spill_to)");
        return NULL;
    }
    Spill *s = self->spill;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = spill_all(self);
    for (int t = 0; t < self->ntables; t++) table_free(&self->tables[t]);
    if (status == 0) status = merge_runs(s, self->nthreads);
    Py_END_ALLOW_THREADS
    free(self->tables);
    self->tables = NULL;
    self->merged = 1;
    if (status < 0 || s->error) {
        self->broken = 1;
        errno = s->error ? s->error : EIO;
        return PyErr_SetFromErrnoWithFilename(PyExc_OSError, s->dir);
    }
    return Py_BuildValue("(KK)", (unsigned long long)s->chunks, (unsigned long long)s->symbols);
}

#endif

#if HAVE_THREADS
static PyObject *Counter_write_spilled(Counter *self, PyObject *args) {
    int fd;
    unsigned long long at_counts, at_lengths, at_symbols;
    if (!PyArg_ParseTuple(args, "iKKK", &fd, &at_counts, &at_lengths, &at_symbols)) return NULL;
    if (!self->merged || !self->spill || self->broken) {
        PyErr_SetString(PyExc_RuntimeError, "write_spilled() comes after a merge_spills() that succeeded");
        return NULL;
    }
    TextTally *text = calloc(1, sizeof(TextTally));
    if (!text) return PyErr_NoMemory();
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = write_sections(self->spill, fd, at_counts, at_lengths, at_symbols, text);
    Py_END_ALLOW_THREADS
    if (status < 0) {
        free(text);
        self->broken = 1;
        errno = self->spill->error;
        return PyErr_SetFromErrnoWithFilename(PyExc_OSError, self->spill->dir);
    }
    PyObject *result = text_tally_result(text);
    free(text);
    return result;
}
#endif


static PyObject *Counter_memory(Counter *self, PyObject *unused) {
    uint64_t total = 0, records = 0;
    if (self->tables)
        for (int t = 0; t < self->ntables; t++) {
            total += (self->tables[t].mask + 1) * 8 + self->tables[t].cap + self->tables[t].capsegs * sizeof(Segment);
            records += self->tables[t].records;
        }
    return Py_BuildValue("(KK)", (unsigned long long)total, (unsigned long long)records);
}

static PyObject *Counter_get_bytes(Counter *self, void *closure) { return PyLong_FromLongLong(self->bytes); }
static PyObject *Counter_get_documents(Counter *self, void *closure) { return PyLong_FromLongLong(self->documents); }
static PyObject *Counter_get_spilled(Counter *self, void *closure) {
    return PyLong_FromLongLong(self->spill ? self->spill->runs : 0);
}

static PyMethodDef Counter_methods[] = {
    {"count_texts", (PyCFunction)Counter_count_texts, METH_VARARGS,
     "count_texts(list of str): count each str as a document, on the threads; returns its UTF-8 bytes."},
    {"count_column", (PyCFunction)Counter_count_column, METH_VARARGS,
     "count_column(offsets, offsets64, data, validity, validity_offset, nrows, row_base, source): count the rows of "
     "an Arrow string column (its buffers; offsets from its first row); returns the bytes counted."},
    {"count_files", (PyCFunction)Counter_count_files, METH_VARARGS,
     "count_files(paths, formats, field, block, progress): count the documents of the files, read in blocks by the "
     "threads: by format (0: each line of a text file, 1: the field of each line of a .jsonl file, 2: each paragraph "
     "of a text file, 3: the whole text file); progress(bytes done) or None. Returns the bytes read."},
    {"result", (PyCFunction)Counter_result, METH_NOARGS,
     "result() -> (symbols, lengths, counts, characters, control): every distinct chunk in order of first appearance, "
     "as three Buffers (uint8 bytes end to end, int32 lengths, int64 counts), the text's characters and its control "
     "characters [(char, count)] in order of first appearance; the counter's memory is given back."},
    {"memory", (PyCFunction)Counter_memory, METH_NOARGS, "memory() -> (bytes the tables hold, records in them)."},
    {"spill_to", (PyCFunction)Counter_spill_to, METH_VARARGS,
     "spill_to(folder, limit, table_limit): from now on a thread's table that would grow past table_limit bytes "
     "writes its records to a run file in folder and starts again empty, and after each call all the tables do so when "
     "together they hold more than limit bytes (a partition's merge then gets limit / threads)."},
#if HAVE_THREADS
    {"merge_spills", (PyCFunction)Counter_merge_spills, METH_NOARGS,
     "merge_spills() -> (chunks, symbol bytes): every table to disk, then each hash partition of the runs merged into a "
     "file of its distinct chunks sorted by first appearance; the counter's tables are given back."},
    {"write_spilled", (PyCFunction)Counter_write_spilled, METH_VARARGS,
     "write_spilled(fd, counts_offset, lengths_offset, symbols_offset) -> (characters, control): the merged partitions "
     "in order of first appearance into the open file fd: int64 counts, int32 lengths, the chunks' bytes, each section "
     "at its offset."},
#endif
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Counter_getset[] = {
    {"bytes", (getter)Counter_get_bytes, NULL, "UTF-8 bytes counted so far", NULL},
    {"documents", (getter)Counter_get_documents, NULL, "documents counted so far", NULL},
    {"spilled", (getter)Counter_get_spilled, NULL, "run files written to the spill folder so far", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CounterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hf_bbpe.engine.training._chunk_count.Counter",
    .tp_basicsize = sizeof(Counter),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Counter(scanner, num_threads): chunk counts over calls of count_texts / count_column / count_files.",
    .tp_new = Counter_new,
    .tp_dealloc = (destructor)Counter_dealloc,
    .tp_methods = Counter_methods,
    .tp_getset = Counter_getset,
};

static PyObject *set_part_bytes(PyObject *self, PyObject *args) {
    Py_ssize_t n = 0;
    if (!PyArg_ParseTuple(args, "|n:part_bytes", &n)) return NULL;
    if (n > 0) part_bytes = n;
    return PyLong_FromSsize_t(part_bytes);
}

/* first_bad_record(symbols, lengths, counts): the first record of three flat buffers (a counts file's:
 * uint8 symbols, int32 lengths, int64 counts) that no counting makes, as (record, what), or None:
 * "empty" (a chunk of no bytes), "negative length", "negative count", "not UTF-8" (its chunk's bytes, each chunk on its
 * own), "past the symbols" (the lengths run past them; record: the first that does), "short" (the
 * lengths end before the symbols do; record: the number of records). counts_file.py says why. */
static PyObject *first_bad_record(PyObject *module, PyObject *args) {
    Py_buffer symbols, lengths, counts;
    if (!PyArg_ParseTuple(args, "y*y*y*", &symbols, &lengths, &counts)) return NULL;
    PyObject *result = NULL;
    if (lengths.len % 4 || counts.len % 8 || lengths.len / 4 != counts.len / 8) {
        PyErr_SetString(PyExc_ValueError, "first_bad_record: one int32 length and one int64 count per record");
        goto done;
    }
    Py_ssize_t n = lengths.len / 4, k = 0, at = 0;
    const char *what = NULL;
    Py_BEGIN_ALLOW_THREADS
    for (; k < n; k++) {
        int32_t len;
        int64_t count;
        memcpy(&len, (const uint8_t *)lengths.buf + 4 * k, 4);
        memcpy(&count, (const uint8_t *)counts.buf + 8 * k, 8);
        if (len <= 0) {
            what = len == 0 ? "empty" : "negative length";
            break;
        }
        if (len > symbols.len - at) {
            what = "past the symbols";
            break;
        }
        if (count < 0) {
            what = "negative count";
            break;
        }
        if (utf8_invalid_at((const uint8_t *)symbols.buf + at, len) >= 0) {
            what = "not UTF-8";
            break;
        }
        at += len;
    }
    if (!what && at != symbols.len) what = "short";
    Py_END_ALLOW_THREADS
    result = what ? Py_BuildValue("(ns)", k, what) : Py_NewRef(Py_None);
done:
    PyBuffer_Release(&symbols);
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&counts);
    return result;
}

static PyMethodDef module_methods[] = {
    {"first_bad_record", first_bad_record, METH_VARARGS,
     "first_bad_record(symbols, lengths, counts): (record, what) of the first record no counting makes (see "
     "counts_file.py), or None."},
    {"part_bytes", set_part_bytes, METH_VARARGS,
     "part_bytes(n=0): the length (UTF-8 bytes) from which a document is counted in parts on several threads; n > 0 "
     "sets it (for tests). Returns the value in force."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_chunk_count", "Counting the chunks of a corpus in C (see hf_bbpe/native_counting.py).",
    -1, module_methods,
};

PyMODINIT_FUNC PyInit__chunk_count(void) {
    if (PyType_Ready(&CounterType) < 0 || PyType_Ready(&BufferType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "Counter", (PyObject *)&CounterType) < 0 ||
        PyModule_AddObjectRef(m, "Buffer", (PyObject *)&BufferType) < 0 ||
        PyModule_AddIntConstant(m, "READS_FILES", HAVE_THREADS) < 0) { /* (count_files needs POSIX) */
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
