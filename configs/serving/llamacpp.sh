#!/usr/bin/env bash
# Serve the Q4_K_M GGUF of Qwen-AgentWorld-35B-A3B with llama.cpp's llama-server on a CPU or a
# laptop GPU. Documented, not run in CI.
# Memory: the Q4_K_M file (~21 GB for 35B parameters at ~4.8 bits) plus the KV cache of --ctx-size.
# Reasoning: inline <think>...</think> in content with --reasoning-format none; deepseek moves it
# to message.reasoning_content. agentworld reads either (agentworld doctor says which you got).
#
#   GGUF=~/models/Qwen-AgentWorld-35B-A3B-Q4_K_M.gguf THREADS=8 bash configs/serving/llamacpp.sh
#   GPU_LAYERS=99 ... bash configs/serving/llamacpp.sh    # offload every layer to a GPU that fits it
#
# Then: agentworld doctor --model-base-url http://127.0.0.1:${PORT:-8080}/v1 --model local
set -euo pipefail
GGUF=${GGUF:?set GGUF to the path of the .gguf file}
CONTEXT=${CONTEXT:-32768}   # 16k of history + 16k of thinking and answer; halve it to save memory
THREADS=${THREADS:-$(nproc)}  # physical cores, not hyper-threads, are what speed it up
GPU_LAYERS=${GPU_LAYERS:-0}
PORT=${PORT:-8080}
HOST=${HOST:-127.0.0.1}
exec llama-server -m "$GGUF" --alias local --ctx-size "$CONTEXT" --threads "$THREADS" \
    --n-gpu-layers "$GPU_LAYERS" --jinja --reasoning-format none \
    --host "$HOST" --port "$PORT" "$@"
