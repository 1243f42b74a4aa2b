#!/usr/bin/env bash
# Writes resources/demo/jargon.txt: the first ~400 kB of the lexicon entries of the Jargon File 4.4.7
# (Eric S. Raymond et al.; public domain, "to be freely used, shared, and modified"), from Debian's
# jargon-text package, dedented. The second corpus of the demo: LoRA adapts the Moby-Dick base model to it.
#   usage: resources/demo/make-jargon.sh   (needs: apt-get install jargon-text)
set -euo pipefail
cd "$(dirname "$0")"
src=/usr/share/doc/jargon-text/jargon.txt.gz
[[ -f $src ]] || { echo "make-jargon.sh: $src is missing (apt-get install jargon-text)" >&2; exit 1; }
{
  echo "The Jargon File, version 4.4.7 (public domain): the first lexicon entries."
  echo
  # head closes the pipe early: the upstream SIGPIPE is expected.
  (set +o pipefail; zcat "$src" | awk 'started || /^   :/ { started = 1; sub(/^   /, ""); print }' | head -c 400000 | sed '$d')
} > jargon.txt
echo "wrote $(wc -c < jargon.txt) bytes to resources/demo/jargon.txt"
