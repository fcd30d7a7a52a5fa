/*
 * UTF-8 and JSON: where UTF-8 stops being valid, and the text field of a .jsonl line.
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

/* ------------------------------------------------------------------------------------------ */
/* UTF-8 and JSON                                                                              */

/* The offset of the first byte of s[0:n] that is not part of valid UTF-8 (what Python's strict
 * decoder rejects: overlong forms, surrogates, code points past U+10FFFF, cut characters), or -1. */
Py_ssize_t utf8_invalid_at(const uint8_t *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        while (i + 16 <= n) {
            uint64_t a, b;
            memcpy(&a, s + i, 8);
            memcpy(&b, s + i + 8, 8);
            if ((a | b) & UINT64_C(0x8080808080808080)) break;
            i += 16;
        }
        if (i >= n) break;
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c < 0xC2 || c > 0xF4) return i;
        int len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (i + len > n) return i;
        uint8_t c1 = s[i + 1];
        if ((c1 & 0xC0) != 0x80) return i;
        if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0) || (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90))
            return i;
        for (int k = 2; k < len; k++)
            if ((s[i + k] & 0xC0) != 0x80) return i;
        i += len;
    }
    return -1;
}

#if HAVE_THREADS /* (.jsonl files are read by run_file only) */
/* What went wrong with a line of a .jsonl file (besides invalid UTF-8). */




/* Note a field name (for the error when the wanted one is missing): 'name', ... cut before 80 bytes. */
static void json_note_name(JsonScan *j, const uint8_t *name, size_t n) {
    size_t used = strlen(j->names);
    if (used && j->names[used - 1] == '.') return; /* cut already */
    if (used + (used ? 2 : 0) + n + 2 >= 80) {
        strcpy(j->names + used, used ? ", ..." : "...");
        return;
    }
    snprintf(j->names + used, sizeof j->names - used, "%s'%.*s'", used ? ", " : "", (int)n, (const char *)name);
}

static inline void json_skip_ws(JsonScan *j) {
    while (j->p < j->end && json_ws(*j->p)) j->p++;
}
static inline int hex_value(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') return (c | 0x20) - 'a' + 10;
    return -1;
}
static int json_fail(JsonScan *j, const char *what) {
    j->error = JSON_BAD;
    j->what = what;
    return -1;
}

/* The string at j->p (its opening quote): checked and skipped; *escaped says whether it holds a
 * backslash (it must then be decoded). */
static int json_string(JsonScan *j, const uint8_t **body, const uint8_t **body_end, int *escaped) {
    j->p++;
    *body = j->p;
    *escaped = 0;
    while (j->p < j->end) {
        uint8_t c = *j->p;
        if (c == '"') {
            *body_end = j->p++;
            return 0;
        }
        if (c < 0x20) return json_fail(j, "a raw control character in a string");
        if (c == '\\') {
            *escaped = 1;
            if (j->p + 1 >= j->end) break;
            uint8_t e = j->p[1];
            if (e == 'u') {
                if (j->p + 6 > j->end) return json_fail(j, "expected 4 hex digits after \\u");
                for (int k = 2; k < 6; k++)
                    if (hex_value(j->p[k]) < 0) return json_fail(j, "expected 4 hex digits after \\u");
                j->p += 6;
                continue;
            }
            if (!strchr("\"\\/bfnrt", e) || !e) return json_fail(j, "expected a valid escape");
            j->p += 2;
            continue;
        }
        j->p++;
    }
    return json_fail(j, "expected the string's closing quote");
}

/* Decode a string body with escapes into out (room: its length); lone surrogates become their
 * 3-byte form (never valid UTF-8) and set *lone. Returns the decoded length. */
static size_t json_decode(const uint8_t *p, const uint8_t *end, uint8_t *out, int *lone) {
    uint8_t *o = out;
    *lone = 0;
    while (p < end) {
        if (*p != '\\') {
            *o++ = *p++;
            continue;
        }
        uint8_t e = p[1];
        p += 2;
        switch (e) {
        case 'b': *o++ = '\b'; continue;
        case 'f': *o++ = '\f'; continue;
        case 'n': *o++ = '\n'; continue;
        case 'r': *o++ = '\r'; continue;
        case 't': *o++ = '\t'; continue;
        case 'u': break;
        default: *o++ = e; continue; /* " \ / */
        }
        uint32_t u = 0;
        for (int k = 0; k < 4; k++) u = u << 4 | (uint32_t)hex_value(p[k]);
        p += 4;
        if (u >= 0xD800 && u < 0xDC00 && end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
            uint32_t v = 0;
            for (int k = 2; k < 6; k++) v = v << 4 | (uint32_t)hex_value(p[k]);
            if (v >= 0xDC00 && v < 0xE000) {
                u = 0x10000 + ((u - 0xD800) << 10) + (v - 0xDC00);
                p += 6;
            }
        }
        if (u >= 0xD800 && u < 0xE000) *lone = 1;
        if (u < 0x80) {
            *o++ = (uint8_t)u;
        } else if (u < 0x800) {
            *o++ = (uint8_t)(0xC0 | u >> 6);
            *o++ = (uint8_t)(0x80 | (u & 0x3F));
        } else if (u < 0x10000) {
            *o++ = (uint8_t)(0xE0 | u >> 12);
            *o++ = (uint8_t)(0x80 | (u >> 6 & 0x3F));
            *o++ = (uint8_t)(0x80 | (u & 0x3F));
        } else {
            *o++ = (uint8_t)(0xF0 | u >> 18);
            *o++ = (uint8_t)(0x80 | (u >> 12 & 0x3F));
            *o++ = (uint8_t)(0x80 | (u >> 6 & 0x3F));
            *o++ = (uint8_t)(0x80 | (u & 0x3F));
        }
    }
    return (size_t)(o - out);
}

static int json_literal(JsonScan *j, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0) return json_fail(j, "expected a JSON value");
    j->p += n;
    return 0;
}

/* A number as Python's json reads it: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?, or -Infinity. */
static int json_number(JsonScan *j) {
    if (*j->p == '-') {
        j->p++;
        if (j->p < j->end && *j->p == 'I') return json_literal(j, "Infinity");
    }
    if (j->p >= j->end || *j->p < '0' || *j->p > '9') return json_fail(j, "expected a JSON value");
    if (*j->p++ != '0')
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    if (j->p + 1 < j->end && *j->p == '.' && j->p[1] >= '0' && j->p[1] <= '9') {
        j->p += 2;
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    if (j->p < j->end && (*j->p | 0x20) == 'e') {
        const uint8_t *q = j->p + 1;
        if (q < j->end && (*q == '+' || *q == '-')) q++;
        if (q < j->end && *q >= '0' && *q <= '9') {
            while (q < j->end && *q >= '0' && *q <= '9') q++;
            j->p = q;
        }
    }
    return 0;
}

/* Skip (and check) the value at j->p; its JSON type name in *type. */
static int json_value(JsonScan *j, int depth, const char **type) {
    json_skip_ws(j);
    if (j->p >= j->end) return json_fail(j, "expected a JSON value");
    uint8_t c = *j->p;
    const uint8_t *b, *e;
    int escaped;
    if (c == '"') {
        *type = "string";
        return json_string(j, &b, &e, &escaped);
    }
    if (c == '{' || c == '[') {
        *type = c == '{' ? "object" : "array";
        if (depth >= JSON_MAX_DEPTH) {
            j->error = JSON_TOO_DEEP;
            return -1;
        }
        uint8_t close = c == '{' ? '}' : ']';
        j->p++;
        json_skip_ws(j);
        if (j->p < j->end && *j->p == close) {
            j->p++;
            return 0;
        }
        for (;;) {
            const char *inner;
            if (c == '{') {
                json_skip_ws(j);
                if (j->p >= j->end || *j->p != '"') return json_fail(j, "expected a property name in double quotes");
                if (json_string(j, &b, &e, &escaped) < 0) return -1;
                json_skip_ws(j);
                if (j->p >= j->end || *j->p != ':') return json_fail(j, "expected ':' after a property name");
                j->p++;
            }
            if (json_value(j, depth + 1, &inner) < 0) return -1;
            json_skip_ws(j);
            if (j->p < j->end && *j->p == ',') {
                j->p++;
                continue;
            }
            if (j->p < j->end && *j->p == close) {
                j->p++;
                return 0;
            }
            return json_fail(j, c == '{' ? "',' or '}'" : "',' or ']'");
        }
    }
    if (c == 't') { *type = "boolean"; return json_literal(j, "true"); }
    if (c == 'f') { *type = "boolean"; return json_literal(j, "false"); }
    if (c == 'n') { *type = "null"; return json_literal(j, "null"); }
    if (c == 'N') { *type = "number"; return json_literal(j, "NaN"); }
    if (c == 'I') { *type = "number"; return json_literal(j, "Infinity"); }
    if (c == '-' || (c >= '0' && c <= '9')) { *type = "number"; return json_number(j); }
    return json_fail(j, "expected a JSON value");
}

/* The text of field (field[0:nfield], UTF-8) of the JSON object on line[0:n]: *text and *len
 * point into the line, or into scratch (room: n) when it had escapes. Duplicate names: the last
 * one counts, as in Python's json. Returns JSON_OK or an error (details in j). */
int json_field(JsonScan *j, const uint8_t *line, size_t n, const uint8_t *field, size_t nfield,
               uint8_t *scratch, const uint8_t **text, size_t *len) {
    j->p = j->start = line;
    j->end = line + n;
    j->error = JSON_OK;
    j->what = NULL;
    j->names[0] = 0;
    json_skip_ws(j);
    if (j->p >= j->end || *j->p != '{') {
        const char *type = "value";
        if (json_value(j, 0, &type) < 0) return j->error;
        json_skip_ws(j);
        if (j->p < j->end) return json_fail(j, "expected the end of the line"), JSON_BAD;
        j->what = type;
        return j->error = JSON_NO_FIELD;
    }
    j->p++;
    const uint8_t *vb = NULL, *ve = NULL;
    int vescaped = 0;
    const char *vtype = NULL;
    json_skip_ws(j);
    if (j->p < j->end && *j->p == '}') {
        j->p++;
    } else {
        for (;;) {
            const uint8_t *kb, *ke;
            int kescaped;
            json_skip_ws(j);
            if (j->p >= j->end || *j->p != '"') return json_fail(j, "expected a property name in double quotes"), JSON_BAD;
            if (json_string(j, &kb, &ke, &kescaped) < 0) return j->error;
            int match;
            if (kescaped) {
                int lone;
                size_t klen = json_decode(kb, ke, scratch, &lone);
                match = klen == nfield && memcmp(scratch, field, nfield) == 0;
            } else {
                match = (size_t)(ke - kb) == nfield && memcmp(kb, field, nfield) == 0;
            }
            if (!match) json_note_name(j, kb, (size_t)(ke - kb));
            json_skip_ws(j);
            if (j->p >= j->end || *j->p != ':') return json_fail(j, "expected ':' after a property name"), JSON_BAD;
            j->p++;
            json_skip_ws(j);
            const uint8_t *value = j->p;
            const char *type;
            if (json_value(j, 1, &type) < 0) return j->error;
            if (match) {
                vtype = type;
                vb = value + 1;
                ve = j->p - 1;
            }
            json_skip_ws(j);
            if (j->p < j->end && *j->p == ',') {
                j->p++;
                continue;
            }
            if (j->p < j->end && *j->p == '}') {
                j->p++;
                break;
            }
            return json_fail(j, "expected ',' or '}'"), JSON_BAD;
        }
    }
    json_skip_ws(j);
    if (j->p < j->end) return json_fail(j, "expected the end of the line"), JSON_BAD;
    if (!vtype) {
        j->what = "object";
        return j->error = JSON_NO_FIELD;
    }
    if (strcmp(vtype, "string") != 0) {
        j->what = vtype;
        return j->error = JSON_NOT_STRING;
    }
    vescaped = memchr(vb, '\\', (size_t)(ve - vb)) != NULL;
    if (!vescaped) {
        *text = vb;
        *len = (size_t)(ve - vb);
        return JSON_OK;
    }
    int lone;
    *len = json_decode(vb, ve, scratch, &lone);
    *text = scratch;
    if (lone) return j->error = JSON_SURROGATE;
    return JSON_OK;
}

#endif

