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
 * gives _chunk_bpe and _chunk_count one chunk (chunk) or the ends of a batch of chunks (chunks);
 * module.c is the Python side (split_*, chunk_ends for tests, set_classes).
 *
 * This file: each pattern's scanner instances, the class tables they read, and the scanners'
 * table (chars.h and windows.h hold the scanning itself).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scan/scan.h"
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

static uint8_t *classes = NULL;     /* per code point: the bits above */
static uint8_t latin1_classes[256]; /* its first 256 entries: all that 1-byte-kind text reads (fits L1) */

static int window_ok;       /* ASCII's classes are as the window scanners assume (set_classes checks) */
static uint32_t ctl_spaces; /* the control characters (below 0x20) that are \s */

#include "scan/chars.h"
#include "scan/windows.h"

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

const PretokScanner scan_scanners[NSCANNERS] = {{gpt2_chunk, &classes, gpt2_chunks},
                                                {gpt4_chunk, &classes, gpt4_chunks},
                                                {o200k_chunk, &classes, o200k_chunks},
                                                {llama3_chunk, &classes, llama3_chunks},
                                                {qwen2_chunk, &classes, qwen2_chunks},
                                                {tekken_chunk, &classes, tekken_chunks},
                                                {superbpe_stage1_chunk, &classes, superbpe_stage1_chunks},
                                                {superbpe_stage2_chunk, &classes, superbpe_stage2_chunks}};

int scan_has_classes(void) { return classes != NULL; }

void scan_set_classes(uint8_t *copy) {
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

int scan_wide_windows(int on) {
    if (on >= 0) wide_windows = on && wide_windows_supported();
    return wide_windows;
}
