// Hugging Face's tokenizers.js (the tokenizer of transformers.js 4) on a saved folder: reads
// {"modules": DIR, "folder": FOLDER, "docs": [...]} as JSON on stdin, loads FOLDER's tokenizer.json
// and tokenizer_config.json from disk, and writes the ids of each document (default options:
// add_special_tokens true, as tokenizer(text) in Python) as a JSON list of lists on stdout.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const request = JSON.parse(readFileSync(0, "utf8"));
const require = createRequire(join(request.modules, "node_modules", "_"));
const { Tokenizer } = require("@huggingface/tokenizers");
const readJson = (name) => JSON.parse(readFileSync(join(request.folder, name), "utf8"));
const tokenizer = new Tokenizer(readJson("tokenizer.json"), readJson("tokenizer_config.json"));
process.stdout.write(JSON.stringify(request.docs.map((doc) => tokenizer.encode(doc).ids)));
