/*
 * Counting files: a file unit's lines, paragraphs or whole text read in blocks by a thread, .jsonl
 * lines' text fields taken out, the errors noted at their line.
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
#include "count/table.h"

#if HAVE_THREADS
/* Read file bytes [at, at + n) into buf; the count read (short at the end of the file), or -1. */
int64_t read_at(int fd, uint8_t *buf, int64_t n, int64_t at) {
    int64_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, buf + got, (size_t)(n - got), (off_t)(at + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break;
        got += r;
    }
    return got;
}

#define LINE_READ 4096 /* the first read past a unit's end (then twice as much each time) */

/* Whether the line that ends with the \n at file offset at - 1 is blank (nothing but \r before its
 * \n), reading back from buf (file bytes [from, from + held)) and, before it, from the file. */
static int blank_line_before(int fd, const uint8_t *buf, int64_t from, int64_t at) {
    int64_t k = at - 2; /* (the byte before that \n) */
    for (; k >= from; k--)
        if (buf[k - from] != '\r') return buf[k - from] == '\n';
    uint8_t back[256];
    while (k >= 0) { /* a run of \r reaching back past the buffer: read on backwards */
        int64_t n = k + 1 < (int64_t)sizeof back ? k + 1 : (int64_t)sizeof back;
        if (read_at(fd, back, n, k + 1 - n) != n) return 0;
        for (int64_t j = n - 1; j >= 0; j--, k--)
            if (back[j] != '\r') return back[j] == '\n';
    }
    return 1; /* (the file's first line) */
}

/* Make the worker's buffer hold the file bytes [from, from + want) (fewer at the end of the file),
 * PAD zeroed bytes after them; *held: the bytes it holds (read on from there). The text counted so
 * far is drained first: the buffer may move. -1 (the error noted) when that fails. */
static int file_hold(Worker *w, int64_t u, FileInput *f, int64_t from, int64_t *held, int64_t want) {
    Job *job = w->job;
    if (want > f->size - from) want = f->size - from; /* (the bytes past the size taken at the start are not read) */
    if (want <= *held) return 0;
    if (tally_drain(&w->tally) < 0 || grow_bytes(&w->buf, &w->bufcap, (size_t)want + PAD) < 0) {
        job_error(job, u, ERR_MEMORY, from + *held);
        return -1;
    }
    int64_t got = read_at(w->fd, w->buf + *held, want - *held, from + *held);
    if (got < 0) {
        InputError err = {.kind = ERR_IO, .unit = u, .where = from + *held, .io_errno = errno};
        job_error_at(job, &err);
        return -1;
    }
    *held += got;
    memset(w->buf + *held, 0, PAD);
    if (*held < want) { /* the file is shorter than it was when the call began */
        job_error(job, u, ERR_CHANGED, from + *held);
        return -1;
    }
    return 0;
}

/* A unit of a text file whose documents are paragraphs or the whole file: it counts the documents
 * that start in [start, end), the last one read on to its end. A document starts at the start of
 * the file and (paragraphs) at each line that is not blank after a line that is (blank: nothing but
 * \r before its \n), as chunk_counting.paragraphs cuts lines; a document counted here is its bytes
 * whole, however long (one thread, in the worker's buffer). */
static void run_file_documents(Worker *w, int64_t u, FileUnit *unit, FileInput *f) {
    Job *job = w->job;
    if (f->format == FILE_WHOLE && unit->start > 0) { /* (the first unit owns the file's one document) */
        ATOMIC_ADD(&job->bytes_done, unit->end - unit->start);
        return;
    }
    int64_t from = unit->start > 0 ? unit->start - 1 : 0, held = 0, step = unit->end - from;
    if (file_hold(w, u, f, from, &held, step) < 0) return;
    int64_t i = 0; /* a line start (relative to from) */
    int prev_blank = 0;
    if (unit->start > 0) {
        const uint8_t *nl = memchr(w->buf, '\n', (size_t)held);
        if (!nl || nl - w->buf + 1 >= unit->end - from) { /* no line starts here */
            ATOMIC_ADD(&job->bytes_done, unit->end - unit->start);
            return;
        }
        i = nl - w->buf + 1;
        prev_blank = f->format == FILE_PARAGRAPHS && blank_line_before(w->fd, w->buf, from, from + i);
    }
    int64_t doc = -1, documents = 0; /* doc: the start of the open document, or -1 */
    for (;;) {
        if (doc < 0 && from + i >= unit->end) break; /* no document starts in this unit */
        int at_end = from + i >= f->size;
        int starts = 0, blank = 0;
        int64_t next = i;
        if (!at_end) {
            for (;;) { /* the line at i: its end, read on as far as it goes */
                const uint8_t *nl = memchr(w->buf + next, '\n', (size_t)(held - next));
                if (nl) {
                    next = nl - w->buf + 1;
                    break;
                }
                next = held;
                if (from + held >= f->size) break;
                step = step < ((int64_t)1 << 26) ? step * 2 : step;
                if (file_hold(w, u, f, from, &held, held + step) < 0) return;
            }
            if (f->format == FILE_PARAGRAPHS) {
                int64_t k = i, stop = next - (w->buf[next - 1] == '\n');
                while (k < stop && w->buf[k] == '\r') k++;
                blank = k == stop;
            }
            starts = from + i == 0 || (f->format == FILE_PARAGRAPHS && prev_blank && !blank);
        }
        if (at_end || starts) {
            if (doc >= 0) { /* the open document ends here */
                Py_ssize_t n = (Py_ssize_t)(i - doc), bad = utf8_invalid_at(w->buf + doc, n);
                if (bad >= 0) {
                    job_error(job, u, ERR_UTF8, from + doc + bad);
                    return;
                }
                if (count_document(job->counter->scanner, &w->tally, w->buf + doc, n, w->buf + held + PAD) < 0) {
                    job_error(job, u, ERR_MEMORY, from + doc);
                    return;
                }
                documents++;
            }
            if (at_end || from + i >= unit->end) break;
            doc = i;
        }
        prev_blank = blank;
        i = next;
    }
    ATOMIC_ADD(&job->bytes_done, unit->end - unit->start);
    ATOMIC_ADD(&job->documents, documents);
}

/* The lines of a file unit: read [start - 1, end) and on to the end of the line that runs past end,
 * then each line that starts in [start, end): a document (text), or the field of a JSON object. */
void run_file(Worker *w, int64_t u) {
    Job *job = w->job;
    FileUnit *unit = &job->units[u];
    FileInput *f = &job->files[unit->file];
    if (w->fd_file != unit->file) {
        if (w->fd >= 0) close(w->fd);
        w->fd_file = -1;
        w->fd = open(f->path, O_RDONLY);
        if (w->fd < 0) {
            InputError err = {.kind = ERR_IO, .unit = u, .where = unit->start, .io_errno = errno};
            job_error_at(job, &err);
            return;
        }
        w->fd_file = unit->file;
    }
    if (f->format == FILE_PARAGRAPHS || f->format == FILE_WHOLE) {
        run_file_documents(w, u, unit, f);
        return;
    }
    int64_t from = unit->start > 0 ? unit->start - 1 : 0, want = unit->end - from;
    if (grow_bytes(&w->buf, &w->bufcap, (size_t)want + PAD) < 0) {
        job_error(job, u, ERR_MEMORY, unit->start);
        return;
    }
    int64_t n = read_at(w->fd, w->buf, want, from);
    if (n < 0) {
        InputError err = {.kind = ERR_IO, .unit = u, .where = unit->start, .io_errno = errno};
        job_error_at(job, &err);
        return;
    }
    if (n < want) { /* the file is shorter than it was when the call began */
        job_error(job, u, ERR_CHANGED, from + n);
        return;
    }
    int64_t s = 0; /* the first line start at or after unit->start, relative to from */
    if (unit->start > 0) {
        const uint8_t *nl = memchr(w->buf, '\n', (size_t)n);
        s = nl ? nl - w->buf + 1 : n;
    }
    int64_t e = n;
    if (n == want && n > 0 && w->buf[n - 1] != '\n' && unit->end < f->size && s < n) {
        for (int64_t step = LINE_READ;; step *= step < (1 << 24) ? 2 : 1) { /* the last line goes on past end */
            if (step > f->size - (from + e)) step = f->size - (from + e); /* (up to the size taken at the start) */
            if (step == 0) break;
            if (grow_bytes(&w->buf, &w->bufcap, (size_t)(e + step) + PAD) < 0) {
                job_error(job, u, ERR_MEMORY, unit->start);
                return;
            }
            int64_t m = read_at(w->fd, w->buf + e, step, from + e);
            if (m < 0) {
                InputError err = {.kind = ERR_IO, .unit = u, .where = from + e, .io_errno = errno};
                job_error_at(job, &err);
                return;
            }
            const uint8_t *nl = memchr(w->buf + e, '\n', (size_t)m);
            if (nl) {
                e = nl - w->buf + 1;
                break;
            }
            e += m;
            if (m < step) { /* the file is shorter than it was when the call began */
                job_error(job, u, ERR_CHANGED, from + e);
                return;
            }
        }
    }
    memset(w->buf + e, 0, PAD);
    const PretokScanner *scanner = job->counter->scanner;
    int64_t documents = 0;
    if (f->format == FILE_TEXT) {
        Py_ssize_t bad = utf8_invalid_at(w->buf + s, (Py_ssize_t)(e - s));
        if (bad >= 0) { /* count nothing from this unit: it will not be used */
            job_error(job, u, ERR_UTF8, from + s + bad);
            return;
        }
    }
    for (int64_t i = s; i < e;) {
        const uint8_t *nl = memchr(w->buf + i, '\n', (size_t)(e - i));
        int64_t end = nl ? nl - w->buf + 1 : e;
        const uint8_t *line = w->buf + i;
        size_t len = (size_t)(end - i);
        if (f->format == FILE_TEXT) {
            if (count_document(scanner, &w->tally, line, (Py_ssize_t)len, w->buf + e + PAD) < 0) {
                job_error(job, u, ERR_MEMORY, from + i);
                return;
            }
            documents++;
        } else {
            size_t blank = 0;
            while (blank < len && json_ws(line[blank])) blank++;
            if (blank < len) {
                Py_ssize_t bad = utf8_invalid_at(line, (Py_ssize_t)len);
                if (bad >= 0) {
                    job_error(job, u, ERR_UTF8, from + i + bad);
                    return;
                }
                if (grow_bytes(&w->scratch, &w->scratchcap, len + PAD) < 0) {
                    job_error(job, u, ERR_MEMORY, from + i);
                    return;
                }
                JsonScan j;
                const uint8_t *text = NULL;
                size_t tlen = 0;
                int status = json_field(&j, line, len, job->field, job->nfield, w->scratch, &text, &tlen);
                if (status != JSON_OK) {
                    InputError err = {.kind = ERR_JSON, .unit = u, .where = from + i, .line_start = from + i,
                                      .json_error = status};
                    if (status == JSON_BAD)
                        snprintf(err.detail, sizeof err.detail, "%s at column %lld", j.what,
                                 (long long)(j.p - line + 1));
                    else if (status == JSON_NO_FIELD && j.names[0])
                        snprintf(err.detail, sizeof err.detail, "%s (its fields: %s; ", j.what, j.names);
                    else if (status == JSON_NO_FIELD)
                        snprintf(err.detail, sizeof err.detail, "%s (", j.what);
                    else if (j.what)
                        snprintf(err.detail, sizeof err.detail, "%s", j.what);
                    job_error_at(job, &err);
                    return;
                }
                if (text == w->scratch) memset(w->scratch + tlen, 0, PAD);
                const uint8_t *readable = text == w->scratch ? w->scratch + tlen + PAD : w->buf + e + PAD;
                if (count_document(scanner, &w->tally, text, (Py_ssize_t)tlen, readable) < 0 ||
                    (text == w->scratch && tally_drain(&w->tally) < 0)) { /* (the scratch is reused) */
                    job_error(job, u, ERR_MEMORY, from + i);
                    return;
                }
                documents++;
            }
        }
        i = end;
    }
    ATOMIC_ADD(&job->bytes_done, unit->end - unit->start);
    ATOMIC_ADD(&job->documents, documents);
}

#endif
