/*
 * What scanners.c (the scanners and their class tables) gives module.c (the Python side of
 * _pretokenize): the scanners' table and the calls that set the tables.
 */
#ifndef HF_BBPE_SCAN_SCAN_H
#define HF_BBPE_SCAN_SCAN_H

#include <Python.h>
#include <stdint.h>

#include "common/internal.h"
#include "scan/scanner.h"

#define NCODEPOINTS 0x110000
#define NSCANNERS 8

/* gpt2, gpt4, o200k, llama3, qwen2, tekken, superbpe_stage1, superbpe_stage2, in that order */
HF_INTERNAL extern const PretokScanner scan_scanners[NSCANNERS];

/* Whether scan_set_classes was called. */
HF_INTERNAL int scan_has_classes(void);
/* Take copy (NCODEPOINTS class bytes, PyMem_RawMalloc'd, kept for good) as the class table: adds
 * NEWLINE to \r and \n, and checks ASCII for the window scanners. Once, with the GIL. */
HF_INTERNAL void scan_set_classes(uint8_t *copy);
/* on = 0 / 1: switch the AVX-512 window scanners off / on (on only where the CPU runs them well);
 * on = -1: no change. Whether they run. */
HF_INTERNAL int scan_wide_windows(int on);

#endif
