/*
 * The JSON of a .jsonl line as files.c reads it (json.c): its errors and the scan's state.
 */
#ifndef HF_BBPE_COUNT_JSON_H
#define HF_BBPE_COUNT_JSON_H

#include "count/count.h"

/* What went wrong with a line of a .jsonl file (besides invalid UTF-8). */
enum { JSON_OK, JSON_BAD, JSON_NO_FIELD, JSON_NOT_STRING, JSON_SURROGATE, JSON_TOO_DEEP };
#define JSON_MAX_DEPTH 1000

typedef struct {
    const uint8_t *p, *end, *start;
    int error;
    const char *what; /* for JSON_BAD: what is wrong; JSON_NOT_STRING, JSON_NO_FIELD: the value's type */
    char names[96];   /* for JSON_NO_FIELD: the object's field names, as written, quoted */
} JsonScan;
static inline int json_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
/* json.c */
HF_INTERNAL Py_ssize_t utf8_invalid_at(const uint8_t *s, Py_ssize_t n);
HF_INTERNAL int json_field(JsonScan *j, const uint8_t *line, size_t n, const uint8_t *field, size_t nfield,
                           uint8_t *scratch, const uint8_t **text, size_t *len);

#endif
