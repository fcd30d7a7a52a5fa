/*
 * HF_INTERNAL: a function or variable that one C file of a kernel gives the others of the same
 * extension. Hidden from other shared objects, so that calls between the files of a kernel are
 * direct (no PLT, no GOT) as they were within one file.
 */
#ifndef HF_BBPE_COMMON_INTERNAL_H
#define HF_BBPE_COMMON_INTERNAL_H

#if defined(__GNUC__) || defined(__clang__)
#define HF_INTERNAL __attribute__((visibility("hidden")))
#else
#define HF_INTERNAL
#endif

#endif
