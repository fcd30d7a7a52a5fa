/*
 * Counting the chunks of a corpus in C (the input side of training), used by
 * hf_bbpe/native_counting.py; its readable twin is chunk_counting.py (with text_files.py for
 * reading files), which the tests hold this kernel to.
 *
 * Text is split by a _pretokenize scanner (a capsule holding a PretokScanner: GPT-2, GPT-4,
 * o200k, Llama 3, Qwen2, Tekken) over UTF-8, on threads (pthreads) that run without the GIL.
 * Each thread counts into its own table: open addressing over 64-bit slots (a 24-bit tag of the
 * hash and the offset of the chunk's record), and one arena of records, [count: 8 bytes]
 * [length: varint][bytes], appended in the order the thread first meets each chunk. No Python
 * object is made per chunk.
 *
 * Documents are never cut blindly: a document is one str, one row of an Arrow string column, or one
 * line (with its \n) of a text file, or the text field of one line of a .jsonl file; a long str is
 * counted in parts that hand over where their chunkings meet (see Part), as one pass. The work is cut
 * into units (ranges of documents, or byte ranges of files that own the lines starting in them),
 * numbered in input order; threads take units in that order (an atomic counter), and a thread
 * notes where each unit's records start in its arena (a segment with the unit's number). Within a
 * table, records are in order of first appearance in that thread's units, so the whole input's
 * order of first appearance is a merge of the tables by (unit, record): result() walks the
 * segments in unit order and emits each chunk where it is first met, with the sum of its counts
 * from every table (which it then zeroes in the others). The output is three flat buffers, the
 * merge loop's input: every chunk's bytes end to end (uint8), their lengths (int32), their counts
 * (int64).
 *
 * Input errors (invalid UTF-8, a .jsonl line that is not JSON, lacks the field or holds another
 * type, a null Arrow row) stop the work at the first one in input order: a thread that meets one
 * notes its unit and position, and no thread starts a later unit. The message names the file and
 * line (or row).
 *
 * This file: the Counter type's calls that count: made and freed, count_texts, count_column and count_files
 * (their arguments turned into a job's units; work.c runs them).
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

PyObject *Counter_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"scanner", "num_threads", NULL};
    PyObject *capsule;
    int nthreads = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "Oi", keywords, &capsule, &nthreads)) return NULL;
    const PretokScanner *scanner = PyCapsule_GetPointer(capsule, PRETOK_CAPSULE_NAME);
    if (!scanner) return NULL;
    if (*scanner->classes == NULL || scanner->chunks == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the scanner's character classes are not loaded (patterns.native_scanner)");
        return NULL;
    }
    if (!HAVE_THREADS || nthreads < 1) nthreads = 1;
    if (nthreads > MAX_THREADS) nthreads = MAX_THREADS;
    Counter *self = (Counter *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->scanner = scanner;
    self->capsule = Py_NewRef(capsule);
    self->nthreads = self->ntables = nthreads;
    self->seam = -1;
    self->tables = calloc((size_t)nthreads, sizeof(Table));
    if (!self->tables) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    for (int k = 0; k < nthreads; k++)
        if (table_init(&self->tables[k]) < 0) {
            Py_DECREF(self);
            return PyErr_NoMemory();
        }
    return (PyObject *)self;
}

void Counter_dealloc(Counter *self) {
    if (self->tables)
        for (int k = 0; k < self->ntables; k++) table_free(&self->tables[k]);
    free(self->tables);
    if (self->spill) {
        free(self->spill->dir);
        free(self->spill);
    }
    Py_XDECREF(self->capsule);
    Py_TYPE(self)->tp_free((PyObject *)self);
}


int check_usable(Counter *self) {
    if (self->tables == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the counts were already taken (result() or merge_spills())");
        return -1;
    }
    if (self->broken) {
        PyErr_SetString(PyExc_RuntimeError, "an earlier call failed: these counts are partial");
        return -1;
    }
    return 0;
}

/* A new empty table (a long document's part's, or the seam table): its index, or -1 (no memory).
 * Only between jobs: the tables move. */
static int counter_add_table(Counter *self) {
    Table *tables = realloc(self->tables, (size_t)(self->ntables + 1) * sizeof(Table));
    if (!tables) return -1;
    self->tables = tables;
    if (table_init(&tables[self->ntables]) < 0) {
        table_free(&tables[self->ntables]);
        return -1;
    }
    tables[self->ntables].spill = self->spill; /* (no limit: spilled between calls, see after_call) */
    return self->ntables++;
}

Py_ssize_t part_bytes = (Py_ssize_t)1 << 20; /* a longer document is cut into parts for the threads */

/* count_texts' units: documents first[u] .. first[u + 1] of about equal size, and each document of
 * part_bytes or more (with two threads or more) cut into parts (part[u] >= 0; see Part), each with
 * its own table. -1 when out of memory. */
static int text_units(Counter *self, Job *job, Py_ssize_t count, int64_t total) {
    int threads = self->nthreads;
    int64_t cap = (int64_t)threads * 8 + 2, per = total / (threads * 8) + 1, size = 0;
    Py_ssize_t nparts = 0;
    for (Py_ssize_t d = 0; d < count; d++)
        if (threads > 1 && job->lens[d] >= part_bytes) nparts += threads, cap += threads + 1;
    job->first = malloc((size_t)(cap + 1) * sizeof(Py_ssize_t));
    job->part = malloc((size_t)cap * sizeof(Py_ssize_t));
    job->parts = calloc((size_t)(nparts ? nparts : 1), sizeof(Part));
    if (!job->first || !job->part || !job->parts) return -1;
    int64_t u = 0;
    Py_ssize_t k = 0, from = 0;
    for (Py_ssize_t d = 0; d <= count; d++) {
        int long_doc = d < count && threads > 1 && job->lens[d] >= part_bytes;
        if (d > from && (d == count || long_doc || size >= per)) { /* close a unit of documents */
            job->first[u] = from;
            job->part[u++] = -1;
            from = d;
            size = 0;
        }
        if (d == count) break;
        if (!long_doc) {
            size += job->lens[d];
            continue;
        }
        Py_ssize_t n = job->lens[d], start = 0;
        const uint8_t *p = job->docs[d];
        PretokText text = {PRETOK_UTF8_KIND, p, n};
        for (int j = 0; j < threads; j++, k++) {
            Part *part = &job->parts[k];
            Py_ssize_t end = j + 1 < threads ? part_cut(p, n, j + 1, threads) : n;
            if (end < start) end = start;
            *part = (Part){.doc = d, .start = start, .end = end, .table = -1, .met = -1, .has_next = j + 1 < threads};
            if (j > 0) {
                part->nmarks = sync_marks(part->marks, SYNC_MARKS, self->scanner, &text, start);
                if ((part->table = counter_add_table(self)) < 0) return -1;
            }
            job->first[u] = d;
            job->part[u++] = k;
            start = end;
        }
        from = d + 1;
    }
    job->first[u] = count;
    job->nunits = u;
    return 0;
}

/* After a job: each part's hand-over to the next (see Part), in order: the chunks between the mark
 * met and the next part's last mark into the seam table (between the two parts' units), or, past a
 * part that met none, the next parts' tables emptied. -1 when out of memory. */
static int join_parts(Counter *self, Job *job) {
    for (int64_t u = 0; u < job->nunits; u++) {
        if (job->part[u] < 0 || job->parts[job->part[u]].start > 0) continue;
        int dropped = 0;
        for (Part *part = &job->parts[job->part[u]]; part->has_next; part++) {
            Part *next = part + 1;
            Table *mine = &self->tables[next->table];
            if (dropped || part->met < 0) {
                dropped = 1;
                table_free(mine);
                if (table_init(mine) < 0) return -1;
                continue;
            }
            if (self->seam < 0 && (self->seam = counter_add_table(self)) < 0) return -1;
            Table *seam = &self->tables[self->seam];
            int64_t unit = 2 * (job->unit_base + u + (next - &job->parts[job->part[u]])) - 1;
            if (table_segment(seam, unit) < 0) return -1;
            const uint8_t *p = job->docs[next->doc];
            for (int m = part->met; m + 1 < next->nmarks; m++) {
                uint64_t len = (uint64_t)(next->marks[m + 1] - next->marks[m]);
                if (!table_add(seam, p + next->marks[m], len, hash_bytes(p + next->marks[m], len))) return -1;
            }
        }
    }
    return 0;
}

/* Units of about equal size: unit u is items first[u] .. first[u + 1] (size(i) bytes each). */
static Py_ssize_t *cut_units(Py_ssize_t count, const Py_ssize_t *sizes, int64_t total, int nthreads, int64_t *nunits) {
    int64_t want = nthreads * 8;
    if (want > count) want = count;
    if (want < 1) want = 1;
    Py_ssize_t *first = malloc(((size_t)want + 1) * sizeof(Py_ssize_t));
    if (!first) return NULL;
    int64_t u = 0, size = 0, per = total / want + 1;
    first[0] = 0;
    for (Py_ssize_t i = 0; i < count && u + 1 < want; i++)
        if ((size += sizes[i]) >= per * (u + 1)) first[++u] = i + 1;
    if (first[u] != count) first[++u] = count;
    *nunits = u;
    return first;
}

PyObject *Counter_count_texts(Counter *self, PyObject *args) {
    PyObject *list;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &list) || check_usable(self) < 0) return NULL;
    Py_ssize_t count = PyList_GET_SIZE(list);
    Job job;
    memset(&job, 0, sizeof job);
    job.kind = JOB_TEXTS;
    job.docs = malloc((size_t)(count ? count : 1) * sizeof(uint8_t *));
    job.lens = malloc((size_t)(count ? count : 1) * sizeof(Py_ssize_t));
    if (!job.docs || !job.lens) {
        free(job.docs);
        free(job.lens);
        return PyErr_NoMemory();
    }
    int64_t total = 0;
    for (Py_ssize_t d = 0; d < count; d++) {
        PyObject *doc = PyList_GET_ITEM(list, d);
        if (!PyUnicode_Check(doc)) {
            PyErr_Format(PyExc_TypeError, "training documents must be str, got %.100s", Py_TYPE(doc)->tp_name);
            goto fail;
        }
        const char *utf8 = PyUnicode_AsUTF8AndSize(doc, &job.lens[d]); /* NUL after it; kept by the str */
        if (!utf8) goto fail;
        job.docs[d] = (const uint8_t *)utf8;
        total += job.lens[d];
    }
    /* (a str's UTF-8 has a NUL after it, not PAD bytes: the scanner reads at most that one) */
    if (text_units(self, &job, count, total) < 0) {
        self->broken = 1; /* (parts' tables may be there already) */
        PyErr_NoMemory();
        goto fail;
    }
    Py_INCREF(list);
    int status = run_job(self, &job, Py_None);
    if (status == 0 && job.error.kind == ERR_NONE && join_parts(self, &job) < 0) job.error.kind = ERR_MEMORY;
    Py_DECREF(list);
    free(job.docs);
    free(job.lens);
    free(job.first);
    free(job.part);
    free(job.parts);
    if (spill_failed(self)) return NULL;
    if (status < 0) return NULL;
    if (job.error.kind == ERR_MEMORY) {
        self->broken = 1;
        return PyErr_NoMemory();
    }
    if (after_call(self) < 0) return NULL;
    return PyLong_FromLongLong(total);
fail:
    free(job.docs);
    free(job.lens);
    free(job.first);
    free(job.part);
    free(job.parts);
    return NULL;
}

/* count_column(offsets, offsets64, data, validity, validity_offset, nrows, row_base, source):
 * count the rows of an Arrow string column (offsets: int32 or int64 buffer from the array's
 * first row, nrows + 1 of them; validity: its bitmap or None). Returns the bytes counted. */
PyObject *Counter_count_column(Counter *self, PyObject *args) {
    Py_buffer offsets, data, validity;
    PyObject *validity_obj;
    int offsets64;
    Py_ssize_t validity_offset, nrows, row_base;
    const char *source;
    if (!PyArg_ParseTuple(args, "y*py*Onnns", &offsets, &offsets64, &data, &validity_obj, &validity_offset, &nrows,
                          &row_base, &source))
        return NULL;
    PyObject *result = NULL;
    int have_validity = 0;
    Py_ssize_t *sizes = NULL;
    Job job;
    memset(&job, 0, sizeof job);
    if (check_usable(self) < 0) goto done;
    if (validity_obj != Py_None) {
        if (PyObject_GetBuffer(validity_obj, &validity, PyBUF_SIMPLE) < 0) goto done;
        have_validity = 1;
        if ((validity_offset + nrows + 7) / 8 > validity.len) {
            PyErr_SetString(PyExc_ValueError, "the validity bitmap is shorter than the rows");
            goto done;
        }
    }
    int width = offsets64 ? 8 : 4;
    if (nrows < 0 || offsets.len < (nrows + 1) * width) {
        PyErr_SetString(PyExc_ValueError, "fewer offsets than rows + 1");
        goto done;
    }
    job.kind = JOB_ARROW;
    job.offsets = offsets.buf;
    job.offsets64 = offsets64;
    job.data = data.buf;
    job.data_len = data.len;
    job.validity = have_validity ? validity.buf : NULL;
    job.validity_offset = validity_offset;
    job.row_base = row_base;
    for (Py_ssize_t r = 0; r <= nrows; r++) {
        int64_t o = arrow_offset(&job, r);
        if (o < 0 || o > data.len || (r && o < arrow_offset(&job, r - 1))) {
            PyErr_Format(PyExc_ValueError, "%s: the column's offsets are out of order or past its data", source);
            goto done;
        }
    }
    sizes = malloc((size_t)(nrows ? nrows : 1) * sizeof(Py_ssize_t));
    if (!sizes) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t r = 0; r < nrows; r++) sizes[r] = (Py_ssize_t)(arrow_offset(&job, r + 1) - arrow_offset(&job, r));
    int64_t total = arrow_offset(&job, nrows) - arrow_offset(&job, 0);
    job.first = cut_units(nrows, sizes, total, self->nthreads, &job.nunits);
    if (!job.first) {
        PyErr_NoMemory();
        goto done;
    }
    if (run_job(self, &job, Py_None) < 0 || spill_failed(self)) goto done;
    InputError *e = &job.error;
    if (e->kind == ERR_MEMORY) PyErr_NoMemory();
    else if (e->kind == ERR_NULL)
        PyErr_Format(PyExc_ValueError, "%s, row %lld: the text is null, not a string", source,
                     (long long)(row_base + e->where));
    else if (e->kind == ERR_UTF8)
        PyErr_Format(PyExc_ValueError, "%s, row %lld: not UTF-8 text (byte %lld of the row; " NOT_UTF8_HINT ")",
                     source, (long long)(row_base + e->where), (long long)e->line_start);
    else if (after_call(self) == 0) result = PyLong_FromLongLong(total);
done:
    free(sizes);
    free(job.first);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&data);
    if (have_validity) PyBuffer_Release(&validity);
    return result;
}

#if HAVE_THREADS
static struct timespec modified_at(const struct stat *st) {
#ifdef __APPLE__
    return st->st_mtimespec;
#else
    return st->st_mtim;
#endif
}

/* Whether file f is not as it was when the call began (its size, or its time of change); *now: its
 * size now (-1: it is gone). */
static int file_changed(const FileInput *f, int64_t *now) {
    struct stat st;
    if (stat(f->path, &st) < 0) {
        *now = -1;
        return 1;
    }
    struct timespec m = modified_at(&st);
    *now = st.st_size;
    return st.st_size != f->size || m.tv_sec != f->mtime.tv_sec || m.tv_nsec != f->mtime.tv_nsec;
}

/* The 1-based line of byte offset at in the file (its \n before it, plus one). */
static long long line_of(const char *path, int64_t at) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    uint8_t buf[1 << 16];
    long long line = 1;
    for (int64_t pos = 0; pos < at;) {
        int64_t want = at - pos < (int64_t)sizeof buf ? at - pos : (int64_t)sizeof buf;
        int64_t got = read_at(fd, buf, want, pos);
        if (got <= 0) break;
        for (const uint8_t *p = buf, *end = buf + got; (p = memchr(p, '\n', (size_t)(end - p))); p++) line++;
        pos += got;
    }
    close(fd);
    return line;
}
#endif

/* count_files(paths, formats, field, block, progress): count the documents of the files, in order:
 * by format (FILE_*), every line of a text file, every paragraph, the whole file, or every line's
 * field of a .jsonl file; block: bytes of a unit (0: chosen); progress: None or a callable given
 * the bytes done. Returns the bytes read. */
PyObject *Counter_count_files(Counter *self, PyObject *args) {
#if !HAVE_THREADS
    PyErr_SetString(PyExc_NotImplementedError, "reading files in C needs POSIX threads");
    return NULL;
#else
    PyObject *paths, *formats, *progress;
    const char *field;
    Py_ssize_t nfield, block;
    if (!PyArg_ParseTuple(args, "O!O!s#nO", &PyList_Type, &paths, &PyList_Type, &formats, &field, &nfield, &block,
                          &progress) ||
        check_usable(self) < 0)
        return NULL;
    Py_ssize_t nfiles = PyList_GET_SIZE(paths);
    if (PyList_GET_SIZE(formats) != nfiles) {
        PyErr_SetString(PyExc_ValueError, "one format per path");
        return NULL;
    }
    PyObject *result = NULL;
    Job job;
    memset(&job, 0, sizeof job);
    job.kind = JOB_FILES;
    job.field = (const uint8_t *)field;
    job.nfield = (size_t)nfield;
    job.files = calloc((size_t)(nfiles ? nfiles : 1), sizeof(FileInput));
    if (!job.files) return PyErr_NoMemory();
    int64_t total = 0;
    for (Py_ssize_t k = 0; k < nfiles; k++) {
        PyObject *encoded;
        if (!PyUnicode_FSConverter(PyList_GET_ITEM(paths, k), &encoded)) goto done;
        job.files[k].path = strdup(PyBytes_AS_STRING(encoded));
        Py_DECREF(encoded);
        if (!job.files[k].path) {
            PyErr_NoMemory();
            goto done;
        }
        long format = PyLong_AsLong(PyList_GET_ITEM(formats, k));
        if (format == -1 && PyErr_Occurred()) goto done;
        if (format < FILE_TEXT || format > FILE_WHOLE) {
            PyErr_Format(PyExc_ValueError, "unknown file format %ld", format);
            goto done;
        }
        job.files[k].format = (int)format;
        struct stat st;
        if (stat(job.files[k].path, &st) < 0) {
            PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, PyList_GET_ITEM(paths, k));
            goto done;
        }
        job.files[k].size = st.st_size;
        job.files[k].mtime = modified_at(&st);
        total += st.st_size;
    }
    if (block <= 0) { /* units: 8 per thread over the whole input, 1 to 16 MB each */
        block = (Py_ssize_t)(total / (8 * self->nthreads) + 1);
        if (block < (1 << 20)) block = 1 << 20;
        if (block > (1 << 24)) block = 1 << 24;
    }
    int64_t nunits = 0;
    for (Py_ssize_t k = 0; k < nfiles; k++) nunits += (job.files[k].size + block - 1) / block;
    job.units = malloc((size_t)(nunits ? nunits : 1) * sizeof(FileUnit));
    if (!job.units) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < nfiles; k++)
        for (int64_t at = 0; at < job.files[k].size; at += block)
            job.units[job.nunits++] =
                (FileUnit){(int)k, at, at + block < job.files[k].size ? at + block : job.files[k].size};
    if (run_job(self, &job, progress) < 0 || spill_failed(self)) goto done;
    InputError *e = &job.error;
    /* a file written to while it was read: its counts are of no one version of it (and its other
     * errors may be its writer's doing), so this comes first */
    for (Py_ssize_t k = 0; k < nfiles; k++) {
        int64_t now;
        int changed = file_changed(&job.files[k], &now);
        if (!changed && !(e->kind == ERR_CHANGED && job.units[e->unit].file == k)) continue;
        self->broken = 1;
        if (now < 0)
            PyErr_Format(PyExc_ValueError, "%S: " CHANGED_WHILE_READ " (%lld bytes when counting began, gone now)%s",
                         PyList_GET_ITEM(paths, k), (long long)job.files[k].size, CHANGED_HINT);
        else
            PyErr_Format(PyExc_ValueError, "%S: " CHANGED_WHILE_READ " (%lld bytes when counting began, %lld now)%s",
                         PyList_GET_ITEM(paths, k), (long long)job.files[k].size, (long long)now, CHANGED_HINT);
        goto done;
    }
    if (e->kind == ERR_NONE) {
        if (after_call(self) == 0) result = PyLong_FromLongLong(total);
        goto done;
    }
    if (e->kind == ERR_MEMORY) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *path = PyList_GET_ITEM(paths, job.units[e->unit].file);
    const char *name = job.files[job.units[e->unit].file].path;
    if (e->kind == ERR_IO) {
        errno = e->io_errno;
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path);
        goto done;
    }
    long long line = line_of(name, e->kind == ERR_JSON ? e->line_start : e->where);
    if (e->kind == ERR_UTF8) {
        uint8_t bad[4] = {0};
        int fd = open(name, O_RDONLY);
        int64_t got = fd >= 0 ? read_at(fd, bad, 4, e->where) : 0;
        if (fd >= 0) close(fd);
        for (int64_t k = 0; k < got; k++)
            if (bad[k] == '\n') got = k + 1; /* (as much of the line as Python shows) */
        PyObject *shown = PyBytes_FromStringAndSize((const char *)bad, got > 0 ? got : 0);
        if (shown) {
            PyErr_Format(PyExc_ValueError, "%S, line %lld: not UTF-8 text (byte %lld: %R; " NOT_UTF8_HINT ")", path,
                         line, (long long)e->where, shown);
            Py_DECREF(shown);
        }
        goto done;
    }
    PyObject *field_obj = PyUnicode_DecodeUTF8(field, nfield, "replace");
    if (!field_obj) goto done;
    switch (e->json_error) {
    case JSON_NO_FIELD:
        PyErr_Format(PyExc_ValueError, "%S, line %lld: no field %R in the JSON %stext_column= names the field)",
                     path, line, field_obj, e->detail);
        break;
    case JSON_NOT_STRING:
        PyErr_Format(PyExc_ValueError, "%S, line %lld: field %R is not a string (a JSON %s)", path, line, field_obj,
                     e->detail);
        break;
    case JSON_SURROGATE:
        PyErr_Format(PyExc_ValueError, "%S, line %lld: field %R holds a lone surrogate (\\ud800-\\udfff), which is "
                     "not text", path, line, field_obj);
        break;
    case JSON_TOO_DEEP:
        PyErr_Format(PyExc_ValueError, "%S, line %lld: not JSON (nested deeper than %d levels)", path, line,
                     JSON_MAX_DEPTH);
        break;
    default:
        PyErr_Format(PyExc_ValueError, "%S, line %lld: not JSON (%s)", path, line, e->detail);
    }
    Py_DECREF(field_obj);
done:
    if (job.files)
        for (Py_ssize_t k = 0; k < nfiles; k++) free(job.files[k].path);
    free(job.files);
    free(job.units);
    return result;
#endif
}

