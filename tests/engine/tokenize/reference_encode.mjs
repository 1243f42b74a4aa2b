// Reference encodings for the tokenizer tests, from @lenml/tokenizers (transformers.js' tokenizers).
//   node reference_encode.mjs CACHE_DIR tokenizer.json tokenizer_config.json input.json output.json
// input.json: {"texts": [...]}. output.json: {"results": [{"plain": ids, "special": ids,
// "decoded": text, "decodedSkip": text}, ...]} where plain = encode(add_special_tokens=false),
// special = encode(add_special_tokens=true), decoded = decode(plain), decodedSkip =
// decode(special, skip_special_tokens=true).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [cacheDir, tokenizerPath, configPath, inputPath, outputPath] = process.argv.slice(2);
if (!outputPath) {
  console.error("usage: node reference_encode.mjs CACHE_DIR tokenizer.json tokenizer_config.json input.json output.json");
  process.exit(2);
}
const library = pathToFileURL(join(cacheDir, "node_modules", "@lenml", "tokenizers", "dist", "main.mjs")).href;
const { TokenizerLoader } = await import(library);

const tokenizerJSON = JSON.parse(readFileSync(tokenizerPath, "utf8"));
const tokenizerConfig = JSON.parse(readFileSync(configPath, "utf8"));
const tokenizer = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });

const decode = (ids, skip) => (ids.length === 0 ? "" : tokenizer.decode(ids, { skip_special_tokens: skip }));
const { texts } = JSON.parse(readFileSync(inputPath, "utf8"));
const results = texts.map((text) => {
  const plain = tokenizer.encode(text, { add_special_tokens: false });
  const special = tokenizer.encode(text, { add_special_tokens: true });
  return { plain, special, decoded: decode(plain, false), decodedSkip: decode(special, true) };
});
writeFileSync(outputPath, JSON.stringify({ results }));
