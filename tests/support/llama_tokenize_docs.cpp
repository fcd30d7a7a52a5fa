// llama.cpp's own tokenizer over many documents in one process (what llama-tokenize --ids does for
// one prompt: load the vocabulary only, then llama_tokenize with add_special = the vocabulary's
// add_bos/add_eos and parse_special = false), so that a test can compare thousands of documents
// without starting a process and loading a 128k vocabulary per document.
//
//   llama_tokenize_docs VOCAB.gguf DOCS.bin
//   llama_tokenize_docs VOCAB.gguf --special
//
// DOCS.bin holds each document as a little-endian uint32 byte length followed by its UTF-8 bytes.
// Prints one line per document: its ids separated by spaces. With --special, prints instead what
// the loaded vocabulary says of its special tokens, one "name value" line each (the ids of bos,
// eos, eot, sep, pad, mask, -1 for none; add_bos, add_eos, add_sep as 0/1; n_tokens).
// Built by scripts/build_llama_cpp.sh.
#include "llama.h"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

static void quiet(enum ggml_log_level level, const char * text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR) {
        fputs(text, stderr);
    }
}

int main(int argc, char ** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s VOCAB.gguf DOCS.bin|--special\n", argv[0]);
        return 2;
    }
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params params = llama_model_default_params();
    params.vocab_only = true;
    llama_model * model = llama_model_load_from_file(argv[1], params);
    if (!model) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    const llama_vocab * vocab = llama_model_get_vocab(model);
    if (std::string(argv[2]) == "--special") {
        printf("bos %d\neos %d\neot %d\nsep %d\npad %d\nmask %d\n", llama_vocab_bos(vocab), llama_vocab_eos(vocab),
               llama_vocab_eot(vocab), llama_vocab_sep(vocab), llama_vocab_pad(vocab), llama_vocab_mask(vocab));
        printf("add_bos %d\nadd_eos %d\nadd_sep %d\nn_tokens %d\n", llama_vocab_get_add_bos(vocab),
               llama_vocab_get_add_eos(vocab), llama_vocab_get_add_sep(vocab), llama_vocab_n_tokens(vocab));
        llama_model_free(model);
        llama_backend_free();
        return 0;
    }

    std::ifstream in(argv[2], std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<llama_token> ids;
    size_t pos = 0;
    while (pos + 4 <= data.size()) {
        const auto * p = reinterpret_cast<const unsigned char *>(data.data() + pos);
        const uint32_t len = p[0] | (p[1] << 8) | (p[2] << 16) | (uint32_t(p[3]) << 24);
        pos += 4;
        if (pos + len > data.size()) {
            fprintf(stderr, "truncated %s\n", argv[2]);
            return 1;
        }
        ids.resize(len + 8);
        int32_t n = llama_tokenize(vocab, data.data() + pos, (int32_t) len, ids.data(), (int32_t) ids.size(), true, false);
        if (n < 0) {
            ids.resize(-n);
            n = llama_tokenize(vocab, data.data() + pos, (int32_t) len, ids.data(), (int32_t) ids.size(), true, false);
        }
        for (int32_t i = 0; i < n; i++) {
            printf(i ? " %d" : "%d", ids[i]);
        }
        printf("\n");
        pos += len;
    }
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
