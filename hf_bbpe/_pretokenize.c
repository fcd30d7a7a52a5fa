/*
 * Split text into chunks with the GPT-2, GPT-4 (cl100k), o200k, Llama 3, Qwen2 or Tekken pattern, in C: the same chunks as
 * the regex module's twin, patterns.compile_pattern(pattern).findall(text) (tests check it), several
 * times faster. Used by patterns.py; any other pattern goes to the regex module.
 *
 * Character classes are the owners' (tiktoken's and tokenizers' regex engines, Unicode 16.0):
 * unicode_tables.py holds them, patterns.py gives them to set_classes once per process, and the
 * twin rewrites \p{L}, \p{N} and \s to mean the same in the regex module, whose Unicode is newer.
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
 * Qwen2: Llama 3's with \p{N} for \p{N}{1,3}. Mistral Tekken: o200k's with \p{N} for \p{N}{1,3}
 *        and no contraction (C?).
 * At each position the first alternative that matches wins (the regex module's alternation);
 * every character matches some alternative, so the chunks cover the text.
 *
 * Each pattern's scanner is compiled once per str kind (1, 2 or 4 bytes per code point), which
 * it reads directly, and once for UTF-8 (PRETOK_UTF8_KIND: what the chunk encoder reads, so that
 * a chunk is a slice of the bytes it encodes; positions are bytes, a character outside ASCII is
 * decoded where it is read); 1-byte text reads a 256-entry copy of the class table. The end of a
 * run of ASCII letters is found 16 (1-byte text, UTF-8) or 8 (2-byte) characters at a time with
 * SSE2, else 8 bytes at a time in 1-byte text and UTF-8 and class by class otherwise. With SSE2,
 * the UTF-8 instance of every pattern takes 64 bytes at a time where it can (the window scanners
 * below: the chunk starts of a window from class masks), built twice on x86-64: with SSE2, and
 * with AVX-512 BW, which runs where the CPU has it (wide_windows). A PretokScanner (see _pretokenize.h)
 * gives _chunk_bpe
 * one chunk (chunk) or the ends of a batch of chunks (chunks); split_* and chunk_ends (for
 * tests) are the Python side.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_pretokenize.h"
#ifdef __SSE2__
#include <emmintrin.h>
#endif
/* With GCC or Clang on x86-64, the window scanners are compiled a second time for AVX-512 (64
 * bytes in one register, class masks straight from compares), which runs where the CPU has it
 * (wide_windows, set at import; see the Python function of that name). */
#if defined(__SSE2__) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define WIDE_WINDOWS 1
#include <immintrin.h>
#define WIDE_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,bmi,bmi2")))
#else
#define WIDE_WINDOWS 0
#endif
static int wide_windows; /* the AVX-512 window scanners run (only where wide_windows_supported) */

#define LETTER 1
#define NUMBER 2
#define SPACE 4
#define UPPERISH 8  /* [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] of the o200k pattern */
#define LOWERISH 16 /* [\p{Ll}\p{Lm}\p{Lo}\p{M}] */
#define NEWLINE 32  /* \r and \n: added by set_classes, not part of the table it is given */
#define NCODEPOINTS 0x110000

static uint8_t *classes = NULL;     /* per code point: the bits above */
static uint8_t latin1_classes[256]; /* its first 256 entries: all that 1-byte-kind text reads (fits L1) */

/* The scanners below are written once, over a Scan whose kind is a constant in each of their
 * three instances (one per str kind, made by SCANNER at the end of the file): with everything
 * inlined, at() becomes one typed array read, and 1-byte text reads the 256-entry table. */
#if defined(__GNUC__) || defined(__clang__)
#define INLINE static inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define INLINE static __forceinline
#else
#define INLINE static inline
#endif

typedef struct {
    int kind;             /* PyUnicode_1BYTE_KIND, 2BYTE or 4BYTE */
    const void *data;
    Py_ssize_t n;
    const uint8_t *table; /* latin1_classes or classes */
} Scan;

/* The code point of the UTF-8 character of len (2 .. 4) bytes at p. */
INLINE Py_UCS4 utf8_decode(const uint8_t *p, int len) {
    if (len == 2) return ((Py_UCS4)(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
    if (len == 3) return ((Py_UCS4)(p[0] & 0x0F) << 12) | ((Py_UCS4)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    return ((Py_UCS4)(p[0] & 0x07) << 18) | ((Py_UCS4)(p[1] & 0x3F) << 12) | ((Py_UCS4)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
}
/* The code point at i (i < t->n), the position after it (next) and the position of the one before
 * it (prev; -1 before the first): in a str's data one step, in UTF-8 one character's bytes. */
INLINE Py_UCS4 at(const Scan *t, Py_ssize_t i) {
    if (t->kind != PRETOK_UTF8_KIND) return PyUnicode_READ(t->kind, t->data, i);
    const uint8_t *s = (const uint8_t *)t->data + i;
    if (s[0] < 0x80) return s[0];
    if (s[0] < 0xE0) return utf8_decode(s, 2);
    if (s[0] < 0xF0) return utf8_decode(s, 3);
    return utf8_decode(s, 4);
}
INLINE Py_ssize_t next(const Scan *t, Py_ssize_t i) {
    if (t->kind != PRETOK_UTF8_KIND) return i + 1;
    uint8_t b = ((const uint8_t *)t->data)[i];
    return i + (b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4);
}
INLINE Py_ssize_t prev(const Scan *t, Py_ssize_t i) {
    if (t->kind != PRETOK_UTF8_KIND) return i - 1;
    const uint8_t *s = t->data;
    do i--; while (i > 0 && (s[i] & 0xC0) == 0x80);
    return i;
}
INLINE int cls(const Scan *t, Py_ssize_t i) { return t->table[at(t, i)]; }
/* whether i is in the text and its class has one of bits */
INLINE int has(const Scan *t, Py_ssize_t i, int bits) { return i < t->n && (cls(t, i) & bits); }
INLINE int is_letter(const Scan *t, Py_ssize_t i) { return has(t, i, LETTER); }
INLINE int is_number(const Scan *t, Py_ssize_t i) { return has(t, i, NUMBER); }
INLINE int is_space(const Scan *t, Py_ssize_t i) { return has(t, i, SPACE); }
INLINE int is_newline(const Scan *t, Py_ssize_t i) { return has(t, i, NEWLINE); }
/* [^\s\p{L}\p{N}] */
INLINE int is_other(const Scan *t, Py_ssize_t i) { return i < t->n && !(cls(t, i) & (LETTER | NUMBER | SPACE)); }

/* Runs of letters end a chunk at an unpredictable place: the loops below find a run's end
 * without a branch per character, so that it costs no mispredicted branch. */
#if defined(__GNUC__) || defined(__clang__)
#define FIRST_SET_BIT(mask) __builtin_ctzll(mask)
#else
INLINE int FIRST_SET_BIT(uint64_t mask) {
    int k = 0;
    while (!(mask & 1)) mask >>= 1, k++;
    return k;
}
#endif
/* 1-byte text is read 8 bytes at a time where the first byte is the lowest of a uint64_t */
#if (defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) || defined(_M_X64) || defined(_M_ARM64)
#define LITTLE_ENDIAN_WORDS 1
#else
#define LITTLE_ENDIAN_WORDS 0
#endif
#define BYTES(b) (0x0101010101010101ULL * (uint8_t)(b))

/* In 1-byte text or UTF-8, the end of the run from j of ASCII characters in 'a'..'z' once OR-ed with fold
 * (0x20: letters of either case), 8 at a time, then the last few (fewer than 8) one at a time. */
INLINE Py_ssize_t ascii_letters_end(const Scan *t, Py_ssize_t j, uint8_t fold) {
    const uint8_t *text = t->data;
    for (; j + 8 <= t->n; j += 8) {
        uint64_t word;
        memcpy(&word, text + j, 8);
        /* per byte, on its 7 low bits v: v + (0x80 - 'a') has its top bit set iff v >= 'a',
         * v + (0x7F - 'z') iff v > 'z', and neither sum carries into the next byte */
        uint64_t v = (word | BYTES(fold)) & BYTES(0x7F);
        uint64_t inside = (v + BYTES(0x80 - 'a')) & ~(v + BYTES(0x7F - 'z')) & ~word & BYTES(0x80);
        uint64_t outside = ~inside & BYTES(0x80);
        if (outside) return j + (FIRST_SET_BIT(outside) >> 3);
    }
    while (j < t->n && (uint8_t)((text[j] | fold) - 'a') <= 'z' - 'a') j++;
    return j;
}

/* The end of the run from j of characters whose class has one of bits, the classes of 8
 * characters at a time gathered into a mask, then the last few one at a time. */
INLINE Py_ssize_t class_run_end(const Scan *t, Py_ssize_t j, int bits) {
    if (t->kind == PRETOK_UTF8_KIND) {
        while (has(t, j, bits)) j = next(t, j);
        return j;
    }
    for (; j + 8 <= t->n; j += 8) {
        uint64_t outside = 0;
        for (int k = 0; k < 8; k++) outside |= (uint64_t)!(cls(t, j + k) & bits) << k;
        if (outside) return j + FIRST_SET_BIT(outside);
    }
    while (has(t, j, bits)) j++;
    return j;
}

#ifdef __SSE2__
/* With SSE2, in 1- or 2-byte text or UTF-8, the end of the run from j of ASCII characters in 'a'..'z'
 * once OR-ed with fold, 16 or 8 characters at a time, then the last few one at a time: a mask
 * of the characters outside the run, whose lowest set bit ends it. */
INLINE Py_ssize_t sse2_letters_end(const Scan *t, Py_ssize_t j, uint8_t fold) {
    const __m128i ored = _mm_set1_epi8((char)fold);
    if (t->kind == PyUnicode_1BYTE_KIND || t->kind == PRETOK_UTF8_KIND) {
        const uint8_t *text = t->data;
        /* byte v is inside iff (v | fold) - 'a' <= 25 unsigned (bytes >= 0x80 end up above) */
        const __m128i a = _mm_set1_epi8('a'), span = _mm_set1_epi8('z' - 'a');
        for (; j + 16 <= t->n; j += 16) {
            __m128i d = _mm_sub_epi8(_mm_or_si128(_mm_loadu_si128((const __m128i *)(text + j)), ored), a);
            unsigned outside = ~(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(d, span), d)) & 0xFFFF;
            if (outside) return j + FIRST_SET_BIT(outside);
        }
    } else {
        const uint16_t *text = t->data;
        /* signed compares: code units >= 0x8000 are negative, below 'a' */
        const __m128i below = _mm_set1_epi16('a' - 1), above = _mm_set1_epi16('z' + 1);
        const __m128i ored16 = _mm_unpacklo_epi8(ored, _mm_setzero_si128());
        for (; j + 8 <= t->n; j += 8) {
            __m128i v = _mm_or_si128(_mm_loadu_si128((const __m128i *)(text + j)), ored16);
            __m128i inside = _mm_and_si128(_mm_cmpgt_epi16(v, below), _mm_cmplt_epi16(v, above));
            unsigned outside = ~(unsigned)_mm_movemask_epi8(inside) & 0xFFFF;
            if (outside) return j + (FIRST_SET_BIT(outside) >> 1);
        }
    }
    while (j < t->n && (at(t, j) | fold) - 'a' <= (Py_UCS4)('z' - 'a')) j++;
    return j;
}
#endif

/* In 1-byte text or UTF-8, the end of the run from j of ASCII letters (see ascii_letters_end),
 * the fastest way this build has. */
INLINE Py_ssize_t ascii_run_end(const Scan *t, Py_ssize_t j, uint8_t fold) {
#ifdef __SSE2__
    return sse2_letters_end(t, j, fold);
#else
    if (LITTLE_ENDIAN_WORDS) return ascii_letters_end(t, j, fold);
    while (j < t->n && (at(t, j) | fold) - 'a' <= (Py_UCS4)('z' - 'a')) j++;
    return j;
#endif
}

/* The end of the run from j of characters whose class has one of bits, where every ASCII
 * letter in 'a'..'z' once OR-ed with fold has them and no other ASCII character does (the
 * caller's promise, which the tests hold it to): runs of ASCII letters are faster to test as
 * characters than class by class. */
INLINE Py_ssize_t run_end(const Scan *t, Py_ssize_t j, int bits, uint8_t fold) {
    if (t->kind == PRETOK_UTF8_KIND) {
        const uint8_t *s = t->data;
        for (;;) { /* runs of ASCII letters many bytes at a time, then of other letters one by one */
            j = ascii_run_end(t, j, fold);
            Py_ssize_t k = j;
            while (k < t->n && s[k] >= 0x80 && (cls(t, k) & bits)) k = next(t, k);
            if (k == j) return j;
            j = k;
        }
    }
#ifdef __SSE2__
    if (t->kind == PyUnicode_1BYTE_KIND) {
        j = sse2_letters_end(t, j, fold);
        while (has(t, j, bits)) j++; /* Latin-1 letters, after which the run may go on */
        return j;
    }
    /* 4-byte text (where this was no faster) and a run in another script than Latin go class
     * by class */
    if (t->kind == PyUnicode_4BYTE_KIND || (j < t->n && at(t, j) >= 128)) return class_run_end(t, j, bits);
    j = sse2_letters_end(t, j, fold);
    return has(t, j, bits) ? class_run_end(t, j, bits) : j;
#else
    if (LITTLE_ENDIAN_WORDS && t->kind == PyUnicode_1BYTE_KIND) {
        j = ascii_letters_end(t, j, fold);
        while (has(t, j, bits)) j++; /* Latin-1 letters, after which the run may go on */
        return j;
    }
    return class_run_end(t, j, bits);
#endif
}

/* \p{L}+ from j */
INLINE Py_ssize_t letters_end(const Scan *t, Py_ssize_t j) { return run_end(t, j, LETTER, 0x20); }

/* Length of the contraction at i ("'s", "'ll"...), or 0: '[sdmt]|'ll|'ve|'re, which is also
 * o200k's 's|'t|'re|'ve|'m|'ll|'d (no contraction is a prefix of another, so order does not
 * matter). With ignore_case, (?i) as the regex module applies it to these letters: ASCII case,
 * and U+017F (long s) for s. */
INLINE Py_ssize_t contraction(const Scan *t, Py_ssize_t i, int ignore_case) {
    if (i + 1 >= t->n || at(t, i) != '\'') return 0; /* (' is one byte in UTF-8 too) */
    Py_UCS4 c = at(t, i + 1);
    Py_ssize_t j = next(t, i + 1);
    if (ignore_case && c < 128) c = (Py_UCS4)Py_TOLOWER(c);
    if (ignore_case && c == 0x17F) c = 's';
    if (c == 's' || c == 'd' || c == 'm' || c == 't') return j - i;
    if (j >= t->n) return 0;
    Py_UCS4 d = at(t, j); /* (after l, v or r, which are ASCII) */
    if (ignore_case && d < 128) d = (Py_UCS4)Py_TOLOWER(d);
    if ((c == 'l' && d == 'l') || (c == 'v' && d == 'e') || (c == 'r' && d == 'e')) return j + 1 - i;
    return 0;
}

/* The end of the last line break in t[i:j], or -1 (\r and \n are one byte in UTF-8, and no
 * other byte is either of them). */
INLINE Py_ssize_t last_newline_end(const Scan *t, Py_ssize_t i, Py_ssize_t j) {
    if (t->kind == PRETOK_UTF8_KIND) {
        const uint8_t *s = t->data;
        for (Py_ssize_t k = j - 1; k >= i; k--)
            if (s[k] == '\n' || s[k] == '\r') return k + 1;
        return -1;
    }
    for (Py_ssize_t k = j - 1; k >= i; k--)
        if (is_newline(t, k)) return k + 1;
    return -1;
}

/* \p{N}{1,most} at a number i (most: 3, or 1 for Qwen2's and Tekken's \p{N}) */
INLINE Py_ssize_t numbers(const Scan *t, Py_ssize_t i, int most) {
    Py_ssize_t j = next(t, i);
    for (int count = 1; count < most && is_number(t, j); count++) j = next(t, j);
    return j - i;
}

/* The whitespace alternatives of the GPT-2 and GPT-4 patterns (o200k and Llama 3 have
 * their own, spaces_to_last_newline), at a space i: \s++$ | (GPT-4 only: \s*[\r\n]) | \s+(?!\S) | \s */
INLINE Py_ssize_t spaces(const Scan *t, Py_ssize_t i, int newline_alternative) {
    Py_ssize_t j = i;
    while (is_space(t, j)) j = next(t, j);
    if (j == t->n) return j - i;                 /* \s++$ */
    if (newline_alternative) {                   /* \s*[\r\n]: up to the run's last line break */
        Py_ssize_t end = last_newline_end(t, i, j);
        if (end >= 0) return end - i;
    }
    Py_ssize_t last = prev(t, j);
    if (last > i) return last - i;               /* \s+(?!\S): leave one space for the next chunk */
    return j - i;                                /* \s */
}

/* \s*[\r\n]+ | \s+(?!\S) | \s+ at a space i: the whitespace alternatives of o200k and Llama 3 */
INLINE Py_ssize_t spaces_to_last_newline(const Scan *t, Py_ssize_t i) {
    Py_ssize_t j = i;
    while (is_space(t, j)) j = next(t, j);
    Py_ssize_t end = last_newline_end(t, i, j);
    if (end >= 0) return end - i;
    Py_ssize_t last = prev(t, j);
    if (j < t->n && last > i) return last - i;
    return j - i;
}

/* GPT-4's pattern, or with llama3 Llama 3's (which differs only in its whitespace alternatives),
 * whose numbers are cut digits at a time (Qwen2's: Llama 3's with \p{N} for \p{N}{1,3}). */
INLINE Py_ssize_t gpt4_family(const Scan *t, Py_ssize_t i, int llama3, int digits) {
    int c = cls(t, i);
    /* [^\r\n\p{L}\p{N}]?+\p{L}++, tried first for the common " word" (a contraction starts
     * with "'", which is neither letter nor space, so the order of the two changes nothing) */
    Py_ssize_t j = i;
    if (!(c & (LETTER | NUMBER | NEWLINE))) {
        Py_ssize_t len = contraction(t, i, 1);
        if (len) return len;
        j = next(t, i);
    }
    if (is_letter(t, j)) return letters_end(t, next(t, j)) - i;
    /* \p{N}{1,3}+ */
    if (c & NUMBER) return numbers(t, i, digits);
    /* ' ?[^\s\p{L}\p{N}]++[\r\n]*+' */
    j = (at(t, i) == ' ' && is_other(t, i + 1)) ? i + 1 : i;
    if (is_other(t, j)) {
        while (is_other(t, j)) j = next(t, j);
        while (is_newline(t, j)) j++; /* (one byte in UTF-8 too) */
        return j - i;
    }
    return llama3 ? spaces_to_last_newline(t, i) : spaces(t, i, 1);
}

INLINE Py_ssize_t gpt4(const Scan *t, Py_ssize_t i) { return gpt4_family(t, i, 0, 3); }
INLINE Py_ssize_t llama3(const Scan *t, Py_ssize_t i) { return gpt4_family(t, i, 1, 3); }
INLINE Py_ssize_t qwen2(const Scan *t, Py_ssize_t i) { return gpt4_family(t, i, 1, 1); }

INLINE Py_ssize_t gpt2(const Scan *t, Py_ssize_t i) {
    Py_ssize_t len = contraction(t, i, 0);
    if (len) return len;
    /* ' ?\p{L}++' | ' ?\p{N}++' | ' ?[^\s\p{L}\p{N}]++': a space joins the run after it */
    Py_ssize_t start = (at(t, i) == ' ' && i + 1 < t->n && !is_space(t, i + 1)) ? i + 1 : i;
    int c = cls(t, start);
    if (!(c & SPACE)) {
        int kind = c & (LETTER | NUMBER); /* 0: the "other" class */
        Py_ssize_t j = next(t, start);
        if (kind == LETTER) return letters_end(t, j) - i;
        while (j < t->n && (cls(t, j) & (LETTER | NUMBER | SPACE)) == kind) j = next(t, j);
        return j - i;
    }
    return spaces(t, i, 0);
}

/* The end of U*W+ from p (greedy U*, giving back characters until W+ can start), or -1. */
INLINE Py_ssize_t upper_then_lower(const Scan *t, Py_ssize_t p) {
    /* most often U* takes nothing (one read of the class instead of two) */
    if (p < t->n && (cls(t, p) & (UPPERISH | LOWERISH)) == LOWERISH) return run_end(t, next(t, p), LOWERISH, 0);
    Py_ssize_t q = p;
    while (has(t, q, UPPERISH)) q = next(t, q);
    for (Py_ssize_t r = q; r >= p; r = prev(t, r))
        if (has(t, r, LOWERISH)) return run_end(t, r, LOWERISH, 0);
    return -1;
}

/* The letter alternatives of o200k, X?U*W+C? | X?U+W*C?, at i (x_here: whether X can match
 * there; without contractions, Tekken's X?U*W+ | X?U+W*), or -1 */
INLINE Py_ssize_t o200k_letters(const Scan *t, Py_ssize_t i, int x_here, int contractions) {
    /* X?U*W+C?, trying X first */
    for (int take_x = x_here; take_x >= 0; take_x--) {
        Py_ssize_t end = upper_then_lower(t, take_x ? next(t, i) : i);
        if (end >= 0) return end + (contractions ? contraction(t, end, 1) : 0) - i;
    }
    /* X?U+W*C? */
    for (int take_x = x_here; take_x >= 0; take_x--) {
        Py_ssize_t q = take_x ? next(t, i) : i;
        if (!has(t, q, UPPERISH)) continue;
        while (has(t, q, UPPERISH)) q = next(t, q);
        while (has(t, q, LOWERISH)) q = next(t, q);
        return q + (contractions ? contraction(t, q, 1) : 0) - i;
    }
    return -1;
}

/* o200k's pattern, or without contractions and with digits 1 Mistral Tekken's (\p{N}, no C?). */
INLINE Py_ssize_t o200k_family(const Scan *t, Py_ssize_t i, int contractions, int digits) {
    int c = cls(t, i);
    /* X is [^\r\n\p{L}\p{N}]: marks belong to it and to U and W alike */
    int x_here = !(c & (LETTER | NUMBER | NEWLINE));
    /* the letter alternatives need a U or W character at i, or at i + 1 after an X */
    if ((c & (UPPERISH | LOWERISH)) || (x_here && has(t, next(t, i), UPPERISH | LOWERISH))) {
        Py_ssize_t len = o200k_letters(t, i, x_here, contractions);
        if (len > 0) return len;
    }
    /* \p{N}{1,3} */
    if (is_number(t, i)) return numbers(t, i, digits);
    /* ' ?[^\s\p{L}\p{N}]+[\r\n/]*' */
    Py_ssize_t j = (at(t, i) == ' ' && is_other(t, i + 1)) ? i + 1 : i;
    if (is_other(t, j)) {
        while (is_other(t, j)) j = next(t, j);
        while (j < t->n && (is_newline(t, j) || at(t, j) == '/')) j++; /* (one byte in UTF-8 too) */
        return j - i;
    }
    return spaces_to_last_newline(t, i);
}

INLINE Py_ssize_t o200k(const Scan *t, Py_ssize_t i) { return o200k_family(t, i, 1, 3); }
INLINE Py_ssize_t tekken(const Scan *t, Py_ssize_t i) { return o200k_family(t, i, 0, 1); }

/* SuperBPE's stage-1 pattern (the paper's plain BPE, and the first merges of its SuperBPE
 * tokenizers): o200k's without contractions, its numbers three digits at a time. */
INLINE Py_ssize_t superbpe_stage1(const Scan *t, Py_ssize_t i) { return o200k_family(t, i, 0, 3); }

/* SuperBPE's stage-2 pattern, \p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S): the length of
 * its match at i, or 0 where none starts. ' ?' takes the space first; without it the run would
 * have to start at the space, which is \s, so a space starts either that run or a run of spaces
 * that a non-space does not follow (it gives back its last space before one). */
INLINE Py_ssize_t superbpe_match(const Scan *t, Py_ssize_t i) {
    int c = cls(t, i);
    if (c & LETTER) return 0;
    if (c & NUMBER) return numbers(t, i, 3);
    int space = at(t, i) == ' ';
    Py_ssize_t j = i + space; /* (a space is one byte in UTF-8 too) */
    if (is_other(t, j) && is_other(t, next(t, j))) {
        j = next(t, next(t, j));
        while (is_other(t, j)) j = next(t, j);
        while (j < t->n && (is_newline(t, j) || at(t, j) == '/')) j++; /* (one byte in UTF-8 too) */
        return j - i;
    }
    if (!space) return 0;
    while (j < t->n && at(t, j) == ' ') j++;
    return j == t->n || is_space(t, j) ? j - i : j - 1 - i;
}

/* The stage-2 pattern as tokenizers' Split(pattern, "isolated") cuts text, which is how the
 * paper's tokenizers run it: its matches, and the text between two matches (letters, spaces
 * before them, single punctuation characters: a superword's words) as one chunk. A chunk
 * starts at a match, or where one ends; it ends where the next match starts. */
INLINE Py_ssize_t superbpe_stage2(const Scan *t, Py_ssize_t i) {
    Py_ssize_t len = superbpe_match(t, i);
    if (len) return len;
    Py_ssize_t j = next(t, i);
    for (;;) {
        j = letters_end(t, j); /* (no match starts at a letter) */
        if (j >= t->n || superbpe_match(t, j)) return j - i;
        j = next(t, j);
    }
}

static int window_ok;       /* ASCII's classes are as the window scanners assume (set_classes checks) */
static uint32_t ctl_spaces; /* the control characters (below 0x20) that are \s */

#if defined(__GNUC__) || defined(__clang__)
#define LAST_SET_BIT(mask) (63 - __builtin_clzll(mask))
#else
INLINE int LAST_SET_BIT(uint64_t mask) {
    int k = 0;
    while (mask >>= 1) k++;
    return k;
}
#endif

#ifdef __SSE2__
/* Window scanners: a pattern on a window of UTF-8 text, the chunk boundaries of the 64 bytes
 * from a chunk start from class masks of the whole window at once (bit k for the byte at k),
 * instead of one chunk after another with a branch on each chunk's kind and end, as far as the
 * window holds ASCII and letters (most of most text: the other characters outside ASCII end it).
 * The chunks from a position depend only on the text from there on (no pattern looks behind),
 * so the window is read as if the text began at its start. Boundaries are given up to the
 * first other character outside ASCII (or one the window cuts), or up to a run of whitespace
 * that reaches it (whose end is not known), or an apostrophe too near it. The hypothesis tests
 * hold each window scanner to the regex module. */
typedef struct {
    /* letters (every byte of a letter outside ASCII), digits, \r\n, ' ', \s, apostrophes;
     * with cased (o200k), the letters' cases: upper (U only: Lu, Lt), lower (W only: Ll) and
     * caseless (both: Lm, Lo), and slashes */
    uint64_t L, N, NL, SP, S, AP, upper, lower, caseless, slash;
    int lim; /* the window's usable length: bits at lim and after are clear */
} WindowClasses;

INLINE uint64_t lanes16(__m128i m, int q) { return (uint64_t)(unsigned)_mm_movemask_epi8(m) << (16 * q); }
INLINE uint64_t below_bit(int k) { return k >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << k) - 1; }

/* The first byte past a run of the bits of m from k on (64 if the run reaches the window's end). */
INLINE int run_past(uint64_t m, int k) {
    uint64_t rest = ~m >> k;
    return rest ? k + FIRST_SET_BIT(rest) : 64;
}

/* The classes of the 64 bytes from s, bit k for the byte at s + k, before characters outside ASCII
 * are read: the lead bytes of those (0xC0 and up; lead3: of 3 or 4 bytes, 0xE0 and up; lead4: of 4,
 * 0xF0 and up), ASCII letters (L), upper-case ones (UP, with
 * cased), digits (N), \r\n (NL), ' ' (SP), ' ' \t \r \n (S), control characters (CTL),
 * apostrophes (AP) and slashes (SL, with cased). */
typedef struct {
    uint64_t lead, lead3, lead4, L, N, NL, SP, S, AP, CTL, UP, SL;
} ByteMasks;

/* ByteMasks 16 bytes at a time with SSE2. */
INLINE void byte_masks_sse2(const uint8_t *s, int cased, ByteMasks *m) {
    uint64_t lead = 0, lead3 = 0, lead4 = 0, L = 0, N = 0, NL = 0, SP = 0, S = 0, AP = 0, CTL = 0, UP = 0, SL = 0;
    for (int q = 0; q < 4; q++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(s + 16 * q));
        __m128i d = _mm_sub_epi8(_mm_or_si128(v, _mm_set1_epi8(0x20)), _mm_set1_epi8('a'));
        L |= lanes16(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8('z' - 'a')), d), q);
        if (cased) {
            d = _mm_sub_epi8(v, _mm_set1_epi8('A'));
            UP |= lanes16(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8('Z' - 'A')), d), q);
            SL |= lanes16(_mm_cmpeq_epi8(v, _mm_set1_epi8('/')), q);
        }
        d = _mm_sub_epi8(v, _mm_set1_epi8('0'));
        N |= lanes16(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d), q);
        __m128i nl = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\r')));
        __m128i sp = _mm_cmpeq_epi8(v, _mm_set1_epi8(' '));
        NL |= lanes16(nl, q);
        SP |= lanes16(sp, q);
        S |= lanes16(_mm_or_si128(_mm_or_si128(nl, sp), _mm_cmpeq_epi8(v, _mm_set1_epi8('\t'))), q);
        CTL |= lanes16(_mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1F)), v), q);
        AP |= lanes16(_mm_cmpeq_epi8(v, _mm_set1_epi8('\'')), q);
        /* (signed: 0xC0 and up are -64 .. -1) */
        __m128i high = _mm_cmplt_epi8(v, _mm_setzero_si128());
        lead |= lanes16(_mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8((char)0xBF)), high), q);
        lead3 |= lanes16(_mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8((char)0xDF)), high), q);
        lead4 |= lanes16(_mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8((char)0xEF)), high), q);
    }
    *m = (ByteMasks){lead, lead3, lead4, L, N, NL, SP, S, AP, CTL, UP, SL};
}

#if WIDE_WINDOWS
/* ByteMasks of all 64 bytes at once with AVX-512 BW: each class is one compare into a mask. */
WIDE_TARGET INLINE void byte_masks_avx512(const uint8_t *s, int cased, ByteMasks *m) {
    __m512i v = _mm512_loadu_si512((const void *)s);
    m->L = _mm512_cmple_epu8_mask(_mm512_sub_epi8(_mm512_or_si512(v, _mm512_set1_epi8(0x20)), _mm512_set1_epi8('a')),
                                  _mm512_set1_epi8('z' - 'a'));
    m->UP = m->SL = 0;
    if (cased) {
        m->UP = _mm512_cmple_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8('A')), _mm512_set1_epi8('Z' - 'A'));
        m->SL = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('/'));
    }
    m->N = _mm512_cmple_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8('0')), _mm512_set1_epi8(9));
    m->NL = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('\n')) | _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('\r'));
    m->SP = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(' '));
    m->S = m->NL | m->SP | _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('\t'));
    m->CTL = _mm512_cmple_epu8_mask(v, _mm512_set1_epi8(0x1F));
    m->AP = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('\''));
    m->lead = _mm512_cmpge_epu8_mask(v, _mm512_set1_epi8((char)0xC0));
    m->lead3 = _mm512_cmpge_epu8_mask(v, _mm512_set1_epi8((char)0xE0));
    m->lead4 = _mm512_cmpge_epu8_mask(v, _mm512_set1_epi8((char)0xF0));
}
#endif

/* The characters outside ASCII of len bytes whose lead bytes are leads, in order, below *lim: a
 * letter's bytes join L (and with cased, UP, LO or CL by its case), with others a number's join N;
 * at any other character, or one the window cuts, *lim becomes its position (*stop: 1 for a
 * character that is no letter, 0 for a cut). One loop per length (len a constant): no branch on
 * a character's length, which text mixing 2- and 3-byte characters would mispredict. */
INLINE void window_letters(const uint8_t *s, uint64_t leads, int len, int cased, int others, int *lim, int *stop,
                           uint64_t *L, uint64_t *N, uint64_t *UP, uint64_t *LO, uint64_t *CL) {
    for (leads &= below_bit(*lim); leads; leads &= leads - 1) {
        int q = FIRST_SET_BIT(leads);
        if (q + len > 64) {
            *lim = q;
            *stop = 0;
            return;
        }
        int c = classes[utf8_decode(s + q, len)];
        uint64_t bytes = (((uint64_t)1 << len) - 1) << q;
        if (!(c & LETTER)) {
            if (others && !(c & SPACE)) {
                if (c & NUMBER) *N |= bytes;
                continue;
            }
            *lim = q;
            *stop = 1;
            return;
        }
        *L |= bytes;
        if (cased) {
            if ((c & (UPPERISH | LOWERISH)) == (UPPERISH | LOWERISH)) *CL |= bytes;
            else if (c & UPPERISH) *UP |= bytes;
            else *LO |= bytes;
        }
    }
}

/* The class masks of the window of 64 bytes from s (a chunk start at position base), from its
 * ByteMasks m, of which the first avail bytes are text (the rest, at the text's end, is padding that
 * no mask keeps); 0 when fewer than 8 bytes are usable (the caller takes a chunk the ordinary way).
 * Where the window meets a character outside ASCII that is no letter (with others, GPT-2's runs
 * of any class, one that is \s), *resume is set past it: no window is worth trying before. */
INLINE int window_classes(const uint8_t *s, const ByteMasks *m, Py_ssize_t base, int avail, int cased, int others,
                          WindowClasses *w, Py_ssize_t *resume) {
    uint64_t L = m->L, N = m->N, NL = m->NL, SP = m->SP, S = m->S, AP = m->AP, CTL = m->CTL, UP = m->UP, SL = m->SL;
    uint64_t LO = L & ~UP, CL = 0; /* (ASCII so far) */
    /* a letter outside ASCII is letter bytes (with others, a number is number bytes and any other
     * character but \s is left as neither: punctuation); the window ends at the first other
     * character outside ASCII, or one that it cuts (the loops lower lim to the first of them) */
    int lim = avail, stop = 0;
    if (m->lead) {
        window_letters(s, m->lead & ~m->lead3, 2, cased, others, &lim, &stop, &L, &N, &UP, &LO, &CL);
        if (m->lead3) {
            window_letters(s, m->lead3 & ~m->lead4, 3, cased, others, &lim, &stop, &L, &N, &UP, &LO, &CL);
            if (m->lead4) window_letters(s, m->lead4, 4, cased, others, &lim, &stop, &L, &N, &UP, &LO, &CL);
        }
        if (stop) *resume = base + lim + 1;
    }
    if (lim < 8) return 0;
    uint64_t valid = below_bit(lim);
    for (uint64_t rare = CTL & ~S & valid; rare; rare &= rare - 1) { /* \v, \f, \x1c-\x1f: as the table says */
        int k = FIRST_SET_BIT(rare);
        if ((ctl_spaces >> s[k]) & 1) S |= (uint64_t)1 << k;
    }
    w->L = L & valid; w->N = N & valid; w->NL = NL & valid; w->SP = SP & valid; w->S = S & valid;
    w->AP = AP & valid; w->upper = UP & valid; w->lower = LO & valid; w->caseless = CL & valid;
    w->slash = SL & valid;
    w->lim = lim;
    return 1;
}

/* The chunk ends at the window's starts below cut (bit 0 excepted, where the window begins) into
 * ends, up to room of them; their number. */
INLINE Py_ssize_t window_ends(uint64_t starts, int cut, Py_ssize_t *ends, Py_ssize_t base, Py_ssize_t room) {
    starts &= below_bit(cut) & ~(uint64_t)1;
    Py_ssize_t count = 0;
    for (; starts && count < room; starts &= starts - 1) ends[count++] = base + FIRST_SET_BIT(starts);
    return count;
}

/* The chunk starts of GPT-4's pattern (and Llama 3's, which cuts whitespace alike but at the end
 * of the text, which no window decides), or with o200k of o200k's, which cuts all but letters
 * as GPT-4's does; with digits 1, numbers digit by digit (Qwen2's: Llama 3's but \p{N}; Tekken's:
 * o200k's but \p{N} and no contractions). A chunk starts:
 * - at a letter that ends no run of letters, unless the character before it joins it: a space or
 *   other \s but \r\n, or a punctuation character that starts a chunk; then there, instead
 *   ([^\r\n\p{L}\p{N}]?+\p{L}++; o200k's X? before its letters);
 * - o200k: also at an upper-case letter (U only) after a lower-case one (W only) in a run of
 *   both cases (X?U*W+C?|X?U+W*C?); a run that mixes caseless letters with cased ones stops the
 *   window at its start;
 * - at a digit after no digit, and every third digit of a run (\p{N}{1,3}+; every digit with
 *   digits 1), and after the run;
 * - at a punctuation character after no punctuation, or at the space before it (' ?[^\s\p{L}\p{N}]++');
 *   the \r\n right after a punctuation run are its own ([\r\n]*+), and a chunk starts after them;
 * - at a run of other whitespace; after its last \r\n (\s*[\r\n]); at its last character when it
 *   has two or more after that (\s+(?!\S)); that last one joins a letter or (a space) a
 *   punctuation run after it, as above;
 * - GPT-4: after a contraction: an apostrophe that starts a chunk, then s, d, m, t or ll, ve, re
 *   in either case (U+017F for s too, as (?i) takes it); o200k: a contraction right after a
 *   letter (C?) belongs to the letters' chunk, and a chunk starts after it. */
INLINE uint64_t gpt4_family_starts(const uint8_t *s, const WindowClasses *w, int o200k, int contractions, int digits,
                                   int *cut_out) {
    const uint64_t L = w->L, N = w->N, NL = w->NL, SP = w->SP, S = w->S, AP = w->AP;
    const uint64_t O = below_bit(w->lim) & ~(L | N | S);
    uint64_t starts = 1;
    /* the line breaks right after a punctuation run are its own (a chunk starts after them at
     * whatever follows, by the rules below) */
    uint64_t absorbed = NL & ~(NL + (NL & (O << 1)));
    uint64_t W = S & ~absorbed; /* whitespace of its own */
    int cut = w->lim;
    if (o200k && ((absorbed << 1) & w->slash)) /* [\r\n/]*: a slash after them is theirs too; not here */
        cut = LAST_SET_BIT(O & ~(O << 1) & below_bit(FIRST_SET_BIT((absorbed << 1) & w->slash)));
    /* punctuation */
    uint64_t o_start = O & ~(O << 1), spaced = o_start & (SP << 1);
    uint64_t o_alone = o_start & ~spaced; /* a punctuation character that starts a chunk */
    starts |= (spaced >> 1) | o_alone;
    /* letters */
    uint64_t l_start = L & ~(L << 1), joined = l_start & (((W & ~NL) | o_alone) << 1);
    starts |= (joined >> 1) | (l_start & ~joined); /* (what follows a run starts a chunk by its own rule) */
    if (o200k) {
        uint64_t cased = w->upper | w->lower, mixed = w->caseless & ((cased << 1) | (cased >> 1));
        int run = mixed ? LAST_SET_BIT(l_start & below_bit(FIRST_SET_BIT(mixed) + 1)) : 64;
        if (run < cut) cut = run;
        starts |= w->upper & (w->lower << 1);
    }
    /* digits, three at a time (or one) */
    uint64_t n_start = digits == 1 ? N : N & ~(N << 1);
    starts |= n_start | (~N & (N << 1) & below_bit(w->lim));
    for (uint64_t runs = digits == 1 ? 0 : n_start; runs; runs &= runs - 1) {
        int a = FIRST_SET_BIT(runs), e = run_past(N, a);
        for (int k = a + 3; k < e; k += 3) starts |= (uint64_t)1 << k;
    }
    /* whitespace */
    uint64_t w_start = W & ~(W << 1);
    starts |= w_start;
    for (uint64_t runs = w_start & (W >> 1); runs; runs &= runs - 1) { /* runs of two or more */
        int a = FIRST_SET_BIT(runs), e = run_past(W, a);
        if (a >= cut) break;
        if (e >= w->lim) { cut = a; break; } /* its end (and with it its chunks) is not known */
        uint64_t breaks = NL & below_bit(e) & ~below_bit(a);
        int rest = breaks ? LAST_SET_BIT(breaks) + 1 : a; /* after its last line break */
        if (rest < e) starts |= (uint64_t)1 << rest;
        if (e - rest >= 2) starts |= (uint64_t)1 << (e - 1);
    }
    /* contractions */
    int after = -1; /* where the last one ended: in o200k the letter before is its own, no letters' */
    for (uint64_t quotes = contractions ? AP & o_alone & (o200k ? L << 1 : ~(uint64_t)0) : 0; quotes; quotes &= quotes - 1) {
        int k = FIRST_SET_BIT(quotes);
        if (o200k && k == after) continue;
        if (k + 3 > cut) { if (k < cut) cut = k; break; }
        uint8_t c = s[k + 1] | 0x20, d = s[k + 2] | 0x20;
        int len = c == 's' || c == 'd' || c == 'm' || c == 't' ? 2
                  : (c == 'l' && d == 'l') || (c == 'v' && d == 'e') || (c == 'r' && d == 'e') ||
                    (s[k + 1] == 0xC5 && s[k + 2] == 0xBF) /* U+017F */ ? 3 : 0;
        if (!len) continue;
        if (k + len >= 64) { cut = k; break; }
        /* (a case change inside it starts nothing; in o200k the letters before take it) */
        starts &= ~(below_bit(k + len) & ~below_bit(o200k ? k : k + 1));
        starts |= (uint64_t)1 << (k + len);
        after = k + len;
    }
    *cut_out = cut;
    return starts;
}

/* The chunk starts of GPT-2's pattern, '(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++
 * |\s++$|\s+(?!\S)|\s. A chunk starts:
 * - at every run of letters, of numbers, of punctuation (in or outside ASCII alike: a run is of
 *   one class), unless a space before it joins it: the last character of a run of whitespace,
 *   when that is ' ';
 * - at a run of whitespace, and at its last character (\s+(?!\S), then \s or the space that joins);
 * - after a contraction: an apostrophe that starts a chunk, then s, d, m, t or ll, ve, re (lower
 *   case only: the pattern has no (?i)). */
INLINE uint64_t gpt2_starts(const uint8_t *s, const WindowClasses *w, int *cut_out) {
    const uint64_t L = w->L, N = w->N, W = w->S, O = below_bit(w->lim) & ~(L | N | W);
    uint64_t runs = (L & ~(L << 1)) | (N & ~(N << 1)) | (O & ~(O << 1));
    uint64_t w_start = W & ~(W << 1), w_last = W & ~(W >> 1);
    int cut = w->lim;
    if ((W >> (w->lim - 1)) & 1) cut = LAST_SET_BIT(w_start); /* a run that reaches the end: unknown */
    uint64_t joined = runs & ((w_last & w->SP) << 1);
    uint64_t starts = 1 | w_start | w_last | (runs & ~joined);
    for (uint64_t quotes = w->AP & runs & ~joined; quotes; quotes &= quotes - 1) {
        int k = FIRST_SET_BIT(quotes);
        if (k + 3 > cut) { if (k < cut) cut = k; break; }
        uint8_t c = s[k + 1], d = s[k + 2];
        int len = c == 's' || c == 'd' || c == 'm' || c == 't' ? 2
                  : (c == 'l' && d == 'l') || (c == 'v' && d == 'e') || (c == 'r' && d == 'e') ? 3 : 0;
        if (!len) continue;
        if (k + len >= 64) { cut = k; break; }
        starts = (starts & ~((uint64_t)1 << (k + 1))) | ((uint64_t)1 << (k + len));
    }
    *cut_out = cut;
    return starts;
}

/* The chunk starts of SuperBPE's stage-2 pattern as an isolated Split (see superbpe_stage2): every
 * match starts a chunk and so does the text after it. Matches:
 * - \p{N}{1,3}: at a digit after no digit and every third digit of a run; a chunk starts after the run;
 * - ' ?[^\s\p{L}\p{N}]{2,}[\r\n/]*': at a run of two or more punctuation characters, or at the
 *   space before it; the \r\n right after the run are its own, and a chunk starts after them;
 * - ' +(?!\S)': at a run of spaces (' ' only) of two or more, or of one before other whitespace;
 *   before other whitespace the whole run, else all but its last space, where a chunk starts.
 * What the window cannot tell (what follows its end) only hides chunk starts after every start it
 * finds, which is safe; but a slash after the line breaks of a punctuation run is the run's
 * ([\r\n/]* takes it, and more), not the start of another: the window stops before such a run. */
INLINE uint64_t superbpe_stage2_starts(const WindowClasses *w, int *cut_out) {
    const uint64_t valid = below_bit(w->lim), N = w->N, SP = w->SP, S = w->S, NL = w->NL;
    const uint64_t O = valid & ~(w->L | N | S);
    int cut = w->lim;
    uint64_t starts = 1;
    /* digits */
    uint64_t n_start = N & ~(N << 1);
    starts |= n_start | (~N & (N << 1) & valid);
    for (uint64_t runs = n_start; runs; runs &= runs - 1) {
        int a = FIRST_SET_BIT(runs), e = run_past(N, a);
        for (int k = a + 3; k < e; k += 3) starts |= (uint64_t)1 << k;
    }
    /* punctuation runs of two or more, their line breaks after them */
    uint64_t pairs = O & (O >> 1), runs2 = pairs | (pairs << 1);
    uint64_t r_start = runs2 & ~(runs2 << 1), spaced = r_start & (SP << 1);
    uint64_t m_start = (r_start & ~spaced) | (spaced >> 1);
    uint64_t absorbed = NL & ~(NL + (NL & (runs2 << 1))), taken = runs2 | absorbed;
    starts |= m_start | (~taken & (taken << 1) & valid);
    uint64_t slashed = (absorbed << 1) & w->slash;
    if (slashed) cut = LAST_SET_BIT(m_start & below_bit(FIRST_SET_BIT(slashed)));
    /* runs of spaces */
    uint64_t sp_start = SP & ~(SP << 1), after = ~SP & (SP << 1) & valid;
    starts |= sp_start & (SP >> 1);                  /* two or more */
    starts |= sp_start & ~(SP >> 1) & (S >> 1);      /* one, before other whitespace */
    starts |= after & S;                             /* after a whole run */
    starts |= ((after & ~S) >> 1) & SP & (SP << 1);  /* at the last space a run of two or more gives back */
    *cut_out = cut;
    return starts;
}

/* Each pattern's window scanner: the ends of up to room chunks from s (a chunk start at position
 * base; 64 readable bytes, of which the first avail are text), as far as the window can tell, into
 * ends; their number (0: the window cannot tell one). A window that the text's end cuts (avail <
 * 64, its padding after) tells as much as one that a character it cannot classify cuts: what comes
 * after lim is unknown to it either way, so the last chunk is left to the chunk-by-chunk scanner,
 * which knows the end of the text. */
#define WINDOW_SCANNER(ATTR, NAME, MASKS, CASED, OTHERS, STARTS)                                   \
    ATTR static Py_ssize_t NAME(const uint8_t *s, Py_ssize_t *ends, Py_ssize_t base, Py_ssize_t room, \
                                Py_ssize_t *resume, int avail) {                                    \
        if (!window_ok) {                                                                           \
            *resume = PY_SSIZE_T_MAX;                                                               \
            return 0;                                                                               \
        }                                                                                           \
        ByteMasks m;                                                                                \
        MASKS(s, CASED, &m);                                                                        \
        WindowClasses w;                                                                            \
        if (!window_classes(s, &m, base, avail, CASED, OTHERS, &w, resume)) return 0;               \
        int cut;                                                                                    \
        uint64_t starts = STARTS;                                                                   \
        return window_ends(starts, cut, ends, base, room);                                          \
    }
/* (SUFFIX names the instance: _wide for AVX-512) */
#define WINDOW_SCANNERS(ATTR, SUFFIX, MASKS)                                                        \
    WINDOW_SCANNER(ATTR, gpt4_window##SUFFIX, MASKS, 0, 0, gpt4_family_starts(s, &w, 0, 1, 3, &cut)) \
    WINDOW_SCANNER(ATTR, qwen2_window##SUFFIX, MASKS, 0, 0, gpt4_family_starts(s, &w, 0, 1, 1, &cut)) \
    WINDOW_SCANNER(ATTR, o200k_window##SUFFIX, MASKS, 1, 0, gpt4_family_starts(s, &w, 1, 1, 3, &cut)) \
    WINDOW_SCANNER(ATTR, tekken_window##SUFFIX, MASKS, 1, 0, gpt4_family_starts(s, &w, 1, 0, 1, &cut)) \
    WINDOW_SCANNER(ATTR, superbpe_stage1_window##SUFFIX, MASKS, 1, 0, gpt4_family_starts(s, &w, 1, 0, 3, &cut)) \
    WINDOW_SCANNER(ATTR, superbpe_stage2_window##SUFFIX, MASKS, 1, 0, superbpe_stage2_starts(&w, &cut)) /* (cased: for slashes) */ \
    WINDOW_SCANNER(ATTR, gpt2_window##SUFFIX, MASKS, 0, 1, gpt2_starts(s, &w, &cut)) /* (runs of one class, any bytes) */
WINDOW_SCANNERS(, , byte_masks_sse2)
#if WIDE_WINDOWS
WINDOW_SCANNERS(WIDE_TARGET, _wide, byte_masks_avx512)
#endif
#endif

/* no window: the scanner goes chunk by chunk */
INLINE Py_ssize_t no_window(const uint8_t *s, Py_ssize_t *ends, Py_ssize_t base, Py_ssize_t room, Py_ssize_t *resume,
                            int avail) {
    (void)s; (void)ends; (void)base; (void)room; (void)avail;
    *resume = PY_SSIZE_T_MAX;
    return 0;
}

/* Each pattern's two entry points of PretokScanner, NAME_chunk(t, i) and NAME_chunks(t, i, ends, max):
 * they switch on the kind once per call and run the instance of the pattern's scanner where the
 * kind is a constant (chunks keeps its loop inside that instance). */
#define SCAN_OF_KIND(KIND, t) {KIND, (t)->data, (t)->n, KIND == PyUnicode_1BYTE_KIND ? latin1_classes : classes}
#define CHUNK_OF_KIND(NAME, KIND)                                                                   \
    {                                                                                               \
        const Scan s = SCAN_OF_KIND(KIND, t);                                                       \
        return NAME(&s, i);                                                                         \
    }
/* (A window that would read past the text's end reads its last bytes from a copy padded with
 * zeros: most documents are a few hundred bytes, so their last 64 would otherwise go chunk by chunk.) */
#define TAIL_WINDOW_MIN 16 /* bytes: a shorter end of text goes chunk by chunk */
#define CHUNKS_OF_KIND(NAME, KIND, WINDOW)                                                          \
    {                                                                                               \
        const Scan s = SCAN_OF_KIND(KIND, t);                                                       \
        Py_ssize_t k = 0, resume = 0;                                                               \
        do {                                                                                        \
            if (KIND == PRETOK_UTF8_KIND && i >= resume && i + TAIL_WINDOW_MIN <= s.n) {            \
                const uint8_t *from = (const uint8_t *)s.data + i;                                  \
                uint8_t tail[64];                                                                   \
                int avail = 64;                                                                     \
                if (i + 64 > s.n) {                                                                 \
                    avail = (int)(s.n - i);                                                         \
                    memset(tail, 0, sizeof tail);                                                   \
                    memcpy(tail, from, (size_t)avail);                                              \
                    from = tail;                                                                    \
                }                                                                                   \
                Py_ssize_t got = WINDOW(from, ends + k, i, max - k, &resume, avail);                \
                if (got) {                                                                          \
                    k += got;                                                                       \
                    i = ends[k - 1];                                                                \
                    continue;                                                                       \
                }                                                                                   \
            }                                                                                       \
            i += NAME(&s, i);                                                                       \
            ends[k++] = i;                                                                          \
        } while (k < max && i < s.n);                                                               \
        return k;                                                                                   \
    }
/* With WIDE_WINDOWS, a pattern's UTF-8 chunks again, with the AVX-512 window scanner inlined (the
 * chunk-by-chunk scanner too), and the switch of NAME_chunks that runs it when wide_windows. */
#if WIDE_WINDOWS
#define WIDE_CHUNKS(NAME, WINDOW)                                                                   \
    WIDE_TARGET static Py_ssize_t NAME##_utf8_chunks_wide(const PretokText *t, Py_ssize_t i, Py_ssize_t *ends, \
                                                          Py_ssize_t max)                           \
        CHUNKS_OF_KIND(NAME, PRETOK_UTF8_KIND, WINDOW##_wide)
#define WIDE_DISPATCH(NAME) if (wide_windows) return NAME##_utf8_chunks_wide(t, i, ends, max);
#else
#define WIDE_CHUNKS(NAME, WINDOW)
#define WIDE_DISPATCH(NAME)
#endif
#define SCANNER(NAME, WINDOW)                                                                       \
    WIDE_CHUNKS(NAME, WINDOW)                                                                       \
    static Py_ssize_t NAME##_chunk(const PretokText *t, Py_ssize_t i) {                             \
        switch (t->kind) {                                                                          \
        case PyUnicode_1BYTE_KIND: CHUNK_OF_KIND(NAME, PyUnicode_1BYTE_KIND)                        \
        case PyUnicode_2BYTE_KIND: CHUNK_OF_KIND(NAME, PyUnicode_2BYTE_KIND)                        \
        case PRETOK_UTF8_KIND: CHUNK_OF_KIND(NAME, PRETOK_UTF8_KIND)                                \
        default: CHUNK_OF_KIND(NAME, PyUnicode_4BYTE_KIND)                                          \
        }                                                                                           \
    }                                                                                               \
    static Py_ssize_t NAME##_chunks(const PretokText *t, Py_ssize_t i, Py_ssize_t *ends, Py_ssize_t max) { \
        switch (t->kind) {                                                                          \
        case PyUnicode_1BYTE_KIND: CHUNKS_OF_KIND(NAME, PyUnicode_1BYTE_KIND, WINDOW)               \
        case PyUnicode_2BYTE_KIND: CHUNKS_OF_KIND(NAME, PyUnicode_2BYTE_KIND, WINDOW)               \
        case PRETOK_UTF8_KIND:                                                                      \
            WIDE_DISPATCH(NAME)                                                                     \
            CHUNKS_OF_KIND(NAME, PRETOK_UTF8_KIND, WINDOW)                                          \
        default: CHUNKS_OF_KIND(NAME, PyUnicode_4BYTE_KIND, WINDOW)                                 \
        }                                                                                           \
    }

#ifndef __SSE2__
#define gpt2_window no_window
#define gpt4_window no_window
#define qwen2_window no_window
#define o200k_window no_window
#define tekken_window no_window
#define superbpe_stage1_window no_window
#define superbpe_stage2_window no_window
#endif
SCANNER(gpt2, gpt2_window)
SCANNER(gpt4, gpt4_window)
SCANNER(o200k, o200k_window)
SCANNER(llama3, gpt4_window) /* (Llama 3 differs only at whitespace that ends the text, which no window decides) */
SCANNER(qwen2, qwen2_window)
SCANNER(tekken, tekken_window)
SCANNER(superbpe_stage1, superbpe_stage1_window)
SCANNER(superbpe_stage2, superbpe_stage2_window)

static int check_classes(void) {
    if (classes != NULL) return 0;
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

#define NSCANNERS 8
static const PretokScanner scanners[NSCANNERS] = {{gpt2_chunk, &classes, gpt2_chunks},
                                                  {gpt4_chunk, &classes, gpt4_chunks},
                                                  {o200k_chunk, &classes, o200k_chunks},
                                                  {llama3_chunk, &classes, llama3_chunks},
                                                  {qwen2_chunk, &classes, qwen2_chunks},
                                                  {tekken_chunk, &classes, tekken_chunks},
                                                  {superbpe_stage1_chunk, &classes, superbpe_stage1_chunks},
                                                  {superbpe_stage2_chunk, &classes, superbpe_stage2_chunks}};
static const char *scanner_names[NSCANNERS] = {"scanner_gpt2", "scanner_gpt4", "scanner_o200k", "scanner_llama3",
                                                "scanner_qwen2", "scanner_tekken", "scanner_superbpe_stage1",
                                                "scanner_superbpe_stage2"};

static PyObject *split_gpt2(PyObject *self, PyObject *args) { return split(args, &scanners[0]); }
static PyObject *split_gpt4(PyObject *self, PyObject *args) { return split(args, &scanners[1]); }
static PyObject *split_o200k(PyObject *self, PyObject *args) { return split(args, &scanners[2]); }
static PyObject *split_llama3(PyObject *self, PyObject *args) { return split(args, &scanners[3]); }
static PyObject *split_qwen2(PyObject *self, PyObject *args) { return split(args, &scanners[4]); }
static PyObject *split_tekken(PyObject *self, PyObject *args) { return split(args, &scanners[5]); }
static PyObject *split_superbpe_stage1(PyObject *self, PyObject *args) { return split(args, &scanners[6]); }
static PyObject *split_superbpe_stage2(PyObject *self, PyObject *args) { return split(args, &scanners[7]); }

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
    if (classes != NULL) { /* set once: encodes running without the GIL may be reading it */
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
    copy['\r'] |= NEWLINE;
    copy['\n'] |= NEWLINE;
    memcpy(latin1_classes, copy, sizeof latin1_classes);
    /* the window scanners' view of ASCII: letters A-Z (upper case only) a-z (lower case only),
     * digits 0-9, \s space, \t \n \r and maybe other control characters; else they stay off */
    int ok = 1;
    uint32_t ctl = 0;
    for (int c = 0; c < 128; c++) {
        int letter = (c | 0x20) >= 'a' && (c | 0x20) <= 'z', digit = c >= '0' && c <= '9';
        int space = (copy[c] & SPACE) != 0;
        if (((copy[c] & LETTER) != 0) != letter || ((copy[c] & NUMBER) != 0) != digit) ok = 0;
        int cases = copy[c] & (UPPERISH | LOWERISH);
        if (cases != (!letter ? 0 : c <= 'Z' ? UPPERISH : LOWERISH)) ok = 0;
        if (space && (letter || digit || (c >= 0x20 && c != ' '))) ok = 0;
        if (!space && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) ok = 0;
        if (space && c < 0x20) ctl |= (uint32_t)1 << c;
    }
    ctl_spaces = ctl;
    window_ok = ok;
    classes = copy;
    Py_RETURN_NONE;
}

/* Whether the CPU (and its OS) runs the AVX-512 window scanners well: AVX-512 BW and VL, and VBMI
 * as the mark of a core that does not slow its clock for 512-bit work (Ice Lake, Zen 4 and later;
 * not Skylake-X). HF_BBPE_NO_AVX512=1 makes the process behave as on a CPU without it, so that the
 * SSE2 build can be run and measured on any machine. */
static int wide_windows_supported(void) {
#if WIDE_WINDOWS
    const char *off = getenv("HF_BBPE_NO_AVX512");
    if (off && *off && strcmp(off, "0") != 0) return 0;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi") &&
           __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
#else
    return 0;
#endif
}

static PyObject *set_wide_windows(PyObject *self, PyObject *args) {
    int on = -1;
    if (!PyArg_ParseTuple(args, "|p:wide_windows", &on)) return NULL;
    if (on >= 0) wide_windows = on && wide_windows_supported();
    return PyBool_FromLong(wide_windows);
}

static PyMethodDef methods[] = {
    {"set_classes", set_classes, METH_VARARGS, "Set the class bits of every code point (see the top of _pretokenize.c); later calls change nothing."},
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
    wide_windows = wide_windows_supported();
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
