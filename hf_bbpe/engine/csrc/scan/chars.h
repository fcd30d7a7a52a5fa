/*
 * The chunk-by-chunk scanners (included by scanners.c only): a Scan over a text of one kind, its
 * character classes, and each pattern's alternatives at one position (see the top of scanners.c).
 */
#ifndef HF_BBPE_SCAN_CHARS_H
#define HF_BBPE_SCAN_CHARS_H

/* The scanners below are written once, over a Scan whose kind is a constant in each of their
 * three instances (one per str kind, made by SCANNER in scanners.c): with everything
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

#endif
