#!/usr/bin/env bash
# Reproduces resources/base/: the demo config (resources/demo/config.json, LLaMA architecture, 2 M
# parameters) pretrained from scratch by tunebench's own CLI on Moby-Dick (resources/demo/moby-dick.txt,
# public domain), with the SentencePiece tokenizer tunebench trains on that corpus. The demo fine-tunes
# this model with LoRA on resources/demo/jargon.txt. Bitwise the same with the same libtorch and threads.
#   usage: resources/base/make-base.sh   (after scripts/build.sh; about 10 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${TUNEBENCH_BUILD_DIR:-build}/app/tunebench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" --db "$work/runs.sqlite3" train --model resources/demo/config.json --data resources/demo/moby-dick.txt \
  --steps 2000 --batch-size 8 --seq-len 128 --lr 3e-3 --warmup 100 --seed 1 --threads 2 \
  --val-fraction 0.02 --eval-every 500 --output "$work/run" -q
for file in config.json model.safetensors tokenizer.model; do
  cp "$work/run/model/$file" resources/base/
done
"$bin" --db "$work/runs.sqlite3" runs metrics "$work/run" --key eval/loss
echo "resources/base: $(du -sh resources/base | cut -f1)"
