/*
 * The parts of a long text that hand over to each other (_chunk_count's Part, _chunk_bpe's
 * PartSync). The scanner's chunk at a position depends only on the text from there on (no pattern
 * it knows looks behind), so two chunkings of the same text that share one boundary share every
 * boundary after it. A text is cut into parts at characters' first bytes; part k > 0 finds its
 * first SYNC_MARKS chunk boundaries (its marks, its start the first) beforehand, and part k - 1
 * goes on past its end until one of its own boundaries is one of them (it met the mark), where it
 * hands over: from there on part k's chunks are the true ones. The first part starts at a true
 * boundary (0), hence every part it hands over to; a part that meets no mark runs to the end of
 * the text, and the parts after it are dropped. What each kernel does at the hand-over (counts
 * into a seam table, ids joined) is its own.
 */
#ifndef HF_BBPE_COMMON_PARTS_H
#define HF_BBPE_COMMON_PARTS_H

#include <Python.h>
#include <stdint.h>

#include "scan/scanner.h"

#define SYNC_MARKS 64

/* Where part k of parts of the UTF-8 p[0:n] starts: n / parts * k, moved on to a character's first byte. */
static inline Py_ssize_t part_cut(const uint8_t *p, Py_ssize_t n, Py_ssize_t k, Py_ssize_t parts) {
    Py_ssize_t at = n / parts * k;
    while (at < n && (p[at] & 0xC0) == 0x80) at++;
    return at;
}

/* The marks of a part that starts at start of t: start, then the ends of its chunks, up to max
 * (<= SYNC_MARKS) of them or to the end of the text, into marks; their number. */
static inline int sync_marks(Py_ssize_t *marks, int max, const PretokScanner *scanner, const PretokText *t,
                             Py_ssize_t start) {
    int n = 1;
    marks[0] = start;
    for (Py_ssize_t at = start; at < t->n && n < max;) marks[n++] = at += scanner->chunk(t, at);
    return n;
}

#define SYNC_NOT_YET (-1) /* sync_meet: end is before the next mark */
#define SYNC_NO_MARK (-2) /* sync_meet: end is past every mark: run to the end of the text */

/* A part's chunk ends at end (ends come in increasing order, *next at 0 for the first): the index
 * of the next part's mark it meets, SYNC_NOT_YET, or SYNC_NO_MARK. *next: the first mark not
 * passed yet. */
static inline int sync_meet(const Py_ssize_t *marks, int nmarks, int *next, Py_ssize_t end) {
    while (*next < nmarks && marks[*next] < end) ++*next;
    if (*next == nmarks) return SYNC_NO_MARK;
    return marks[*next] == end ? *next : SYNC_NOT_YET;
}

#endif
