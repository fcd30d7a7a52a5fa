/*
 * What scan/ (the _pretokenize kernel) gives encode/ and count/: a scanner that gives the length of the chunk
 * starting at a position of a str's data, or the ends of a batch of consecutive chunks, so that
 * the chunk encoder can split and encode a whole document without the GIL and without a Python
 * object per chunk. _pretokenize exposes one capsule per pattern (scanner_gpt2, scanner_gpt4,
 * scanner_o200k, scanner_llama3) holding a PretokScanner.
 */
#ifndef HF_BBPE_PRETOKENIZE_H
#define HF_BBPE_PRETOKENIZE_H

#include <Python.h>
#include <stdint.h>

/* A text to split: a str's data (kind PyUnicode_1BYTE_KIND, 2BYTE or 4BYTE; positions count code
 * points), or its UTF-8 (kind PRETOK_UTF8_KIND: valid UTF-8 without surrogates, as
 * PyUnicode_AsUTF8AndSize gives it, with a byte after the end; positions count bytes and always
 * fall on the first byte of a character). */
#define PRETOK_UTF8_KIND 8

typedef struct {
    int kind;         /* PyUnicode_KIND, or PRETOK_UTF8_KIND */
    const void *data; /* PyUnicode_DATA, or the UTF-8 */
    Py_ssize_t n;     /* length in code points, or in bytes */
} PretokText;

typedef struct {
    /* length (> 0) of the chunk that starts at i < t->n */
    Py_ssize_t (*chunk)(const PretokText *t, Py_ssize_t i);
    /* the class table chunk() reads: NULL until _pretokenize.set_classes() was called */
    uint8_t *const *classes;
    /* NULL, or: fill ends[0:k] with the end positions of up to max consecutive chunks starting at
     * i < t->n and return k >= 1 (k < max only when the text ends); the chunks chunk() gives */
    Py_ssize_t (*chunks)(const PretokText *t, Py_ssize_t i, Py_ssize_t *ends, Py_ssize_t max);
} PretokScanner;

#define PRETOK_CAPSULE_NAME "hf_bbpe.engine.chunking._pretokenize.scanner"

#endif
