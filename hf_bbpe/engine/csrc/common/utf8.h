/*
 * UTF-8 to a str's code points without the GIL: measuring bytes (valid as Python's strict codec
 * takes them? how many characters, and the largest?) and writing them into the data of a str made
 * with PyUnicode_New(characters, largest). Bytes that are not valid go to Python's codec instead.
 */
#ifndef HF_BBPE_COMMON_UTF8_H
#define HF_BBPE_COMMON_UTF8_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define UTF8_ASCII_MASK UINT64_C(0x8080808080808080)

/* The code point of the character at s[*at], whose first byte is above 0x7F, with *at moved past
 * it; -1 when it is not valid as Python's strict codec takes UTF-8 (cut short by n, an overlong
 * form, a surrogate, above U+10FFFF). */
static inline int32_t utf8_next(const uint8_t *s, size_t n, size_t *at) {
    size_t i = *at;
    uint32_t c = s[i], cp;
    if (c >= 0xC2 && c <= 0xDF) {
        if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return -1;
        cp = (c & 0x1F) << 6 | (s[i + 1] & 0x3F);
        *at = i + 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        if (i + 2 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80) return -1;
        cp = (c & 0x0F) << 12 | (uint32_t)(s[i + 1] & 0x3F) << 6 | (s[i + 2] & 0x3F);
        if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
        *at = i + 3;
    } else if (c >= 0xF0 && c <= 0xF4) {
        if (i + 3 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80)
            return -1;
        cp = (c & 0x07) << 18 | (uint32_t)(s[i + 1] & 0x3F) << 12 | (uint32_t)(s[i + 2] & 0x3F) << 6 | (s[i + 3] & 0x3F);
        if (cp < 0x10000 || cp > 0x10FFFF) return -1;
        *at = i + 4;
    } else {
        return -1;
    }
    return (int32_t)cp;
}

/* The number of characters of s[0:n] if it is valid UTF-8 as Python's strict codec takes it (no
 * overlong form, no surrogate, nothing above U+10FFFF), with the largest code point above ASCII in
 * *maxchar (0 when all are ASCII); -1 if it is not. */
static inline ptrdiff_t utf8_measure(const uint8_t *s, size_t n, uint32_t *maxchar) {
    size_t i = 0;
    ptrdiff_t chars = 0;
    uint32_t max = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & UTF8_ASCII_MASK)) {
                i += 8;
                chars += 8;
                continue;
            }
        }
        if (s[i] < 0x80) {
            i++;
            chars++;
            continue;
        }
        int32_t cp = utf8_next(s, n, &i);
        if (cp < 0) return -1;
        if ((uint32_t)cp > max) max = (uint32_t)cp;
        chars++;
    }
    *maxchar = max;
    return chars;
}

/* The characters of s[0:n] if it is valid UTF-8 (its bytes that are no continuation byte), and its
 * largest byte in *top, which bounds its largest code point: below 0xC4, U+00FF; below 0xF0,
 * U+FFFF. One pass the compiler vectorizes; utf8_fill_checked checks the bytes afterwards. */
static inline size_t utf8_starts(const uint8_t *s, size_t n, uint8_t *top) {
    size_t chars = 0;
    uint8_t max = 0;
    for (size_t i = 0; i < n; i++) {
        chars += (int8_t)s[i] > -65; /* (0x80-0xBF, the continuation bytes, are -128 to -65) */
        max = s[i] > max ? s[i] : max;
    }
    *top = max;
    return chars;
}

/* Write the code points of s[0:n], valid UTF-8 (utf8_measure said so), into out as units of kind
 * bytes (1, 2 or 4: the str's PyUnicode_KIND for the largest code point). */
static inline void utf8_fill(const uint8_t *s, size_t n, void *out, int kind) {
    size_t i = 0, k = 0;
    uint8_t *o1 = out;
    uint16_t *o2 = out;
    uint32_t *o4 = out;
    while (i < n) {
        uint32_t c = s[i], cp;
        if (c < 0x80) {
            cp = c;
            i++;
        } else if (c < 0xE0) {
            cp = (c & 0x1F) << 6 | (s[i + 1] & 0x3F);
            i += 2;
        } else if (c < 0xF0) {
            cp = (c & 0x0F) << 12 | (uint32_t)(s[i + 1] & 0x3F) << 6 | (s[i + 2] & 0x3F);
            i += 3;
        } else {
            cp = (c & 0x07) << 18 | (uint32_t)(s[i + 1] & 0x3F) << 12 | (uint32_t)(s[i + 2] & 0x3F) << 6 | (s[i + 3] & 0x3F);
            i += 4;
        }
        if (kind == 1) o1[k++] = (uint8_t)cp;
        else if (kind == 2) o2[k++] = (uint16_t)cp;
        else o4[k++] = cp;
    }
}

/* utf8_fill, checking as it goes that s[0:n] is valid UTF-8 (as utf8_measure) of exactly chars
 * characters (out holds that many, as UNIT): 0, or -1 when it is not (out then partly written).
 * One function per kind of str, so that no store has to choose. */
#define UTF8_FILL_CHECKED(NAME, UNIT)                                                                                  \
    static inline int NAME(const uint8_t *s, size_t n, UNIT *out, size_t chars) {                                      \
        size_t i = 0, k = 0;                                                                                           \
        while (i < n) {                                                                                                \
            if (i + 8 <= n && k + 8 <= chars) {                                                                        \
                uint64_t w;                                                                                            \
                memcpy(&w, s + i, 8);                                                                                  \
                if (!(w & UTF8_ASCII_MASK)) {                                                                          \
                    for (int j = 0; j < 8; j++) out[k + j] = (UNIT)s[i + j];                                           \
                    i += 8;                                                                                            \
                    k += 8;                                                                                            \
                    continue;                                                                                          \
                }                                                                                                      \
            }                                                                                                          \
            int32_t cp = s[i];                                                                                         \
            if (cp < 0x80) i++;                                                                                        \
            else if ((cp = utf8_next(s, n, &i)) < 0) return -1;                                                        \
            if (k >= chars) return -1;                                                                                 \
            out[k++] = (UNIT)cp;                                                                                       \
        }                                                                                                              \
        return k == chars ? 0 : -1;                                                                                    \
    }
UTF8_FILL_CHECKED(utf8_fill_checked1, uint8_t)
UTF8_FILL_CHECKED(utf8_fill_checked2, uint16_t)
UTF8_FILL_CHECKED(utf8_fill_checked4, uint32_t)

static inline int utf8_fill_checked(const uint8_t *s, size_t n, void *out, int kind, size_t chars) {
    if (kind == 1) return utf8_fill_checked1(s, n, out, chars);
    if (kind == 2) return utf8_fill_checked2(s, n, out, chars);
    return utf8_fill_checked4(s, n, out, chars);
}

/* The UTF-16 code units of s[0:n] (a character above U+FFFF as a surrogate pair) into out, which
 * has room for n, if s is valid UTF-8 as utf8_measure takes it: how many, with the largest code
 * point or-ed into *maxchar (an upper bound of it: its bits); -1 if it is not. */
static inline ptrdiff_t utf8_to_utf16(const uint8_t *s, size_t n, uint16_t *out, uint32_t *maxchar) {
    size_t i = 0, k = 0;
    uint32_t high = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & UTF8_ASCII_MASK)) {
                for (int j = 0; j < 8; j++) out[k + j] = s[i + j];
                i += 8;
                k += 8;
                continue;
            }
        }
        if (s[i] < 0x80) {
            out[k++] = s[i++];
            continue;
        }
        int32_t c = utf8_next(s, n, &i);
        if (c < 0) return -1;
        uint32_t cp = (uint32_t)c;
        if (cp > 0xFFFF) {
            high |= cp;
            cp -= 0x10000;
            out[k++] = (uint16_t)(0xD800 | cp >> 10);
            out[k++] = (uint16_t)(0xDC00 | (cp & 0x3FF));
            continue;
        }
        high |= cp;
        out[k++] = (uint16_t)cp;
    }
    *maxchar |= high;
    return (ptrdiff_t)k;
}

#endif
