// A tokenizer.json's Split regex in JavaScript's own RegExp, as transformers.js 3.x compiles it
// (createPattern in its src/tokenizers.js): the needless escapes \# \& \~ dropped, case-insensitive
// groups (?i:...) written out (V8 before 12.5 has no modifier groups; transformers.js 3.x rewrites
// the contraction groups of the Llama 3 and cl100k patterns into [sS]-style classes), then
// new RegExp(pattern, "gu"). Reads {"patterns": {name: regex}, "texts": [...]} as JSON on stdin and
// writes {name: {"error": message}} or {name: {"chunks": [[match, ...] per text]}} on stdout.
import { readFileSync } from "node:fs";

const bothCases = (body) =>
  body.replace(/\[[^\]]*\]|[A-Za-z]/g, (part) => {
    if (part.length === 1) return `[${part.toLowerCase()}${part.toUpperCase()}]`;
    const letters = part.slice(1, -1).replace(/[A-Za-z]/g, (c) => c.toLowerCase() + c.toUpperCase());
    return `[${letters}]`;
  });

const forJavaScript = (regex) =>
  regex.replace(/\\([#&~])/g, "$1").replace(/\(\?i:((?:[^()\\]|\\.)*)\)/g, (_, body) => `(?:${bothCases(body)})`);

const request = JSON.parse(readFileSync(0, "utf8"));
const result = {};
for (const [name, regex] of Object.entries(request.patterns)) {
  try {
    const compiled = new RegExp(forJavaScript(regex), "gu");
    result[name] = { chunks: request.texts.map((text) => Array.from(text.matchAll(compiled), (m) => m[0])) };
  } catch (error) {
    result[name] = { error: String(error.message) };
  }
}
process.stdout.write(JSON.stringify(result));
