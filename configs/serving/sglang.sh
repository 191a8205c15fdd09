#!/usr/bin/env bash
# Serve Qwen-AgentWorld with SGLang (recommended on GPUs). Documented, not run in CI.
# Reasoning comes back in message.reasoning_content (the qwen3 reasoning parser).
#
#   MODEL=Qwen/Qwen-AgentWorld-35B-A3B TP=2 bash configs/serving/sglang.sh        # 2 x 80 GB
#   MODEL=Qwen/Qwen-AgentWorld-397B-A17B TP=8 bash configs/serving/sglang.sh      # 8 x 141 GB (H200)
#
# Then: agentworld doctor --model-base-url http://127.0.0.1:${PORT:-30000}/v1 --model "$MODEL"
set -euo pipefail
MODEL=${MODEL:-Qwen/Qwen-AgentWorld-35B-A3B}
TP=${TP:-2}                 # tensor parallel size: GPUs per replica
CONTEXT=${CONTEXT:-65536}   # long histories plus 4-11k thinking tokens per prediction
PORT=${PORT:-30000}
HOST=${HOST:-127.0.0.1}     # another host exposes the model to the network: put auth in front
exec python -m sglang.launch_server --model-path "$MODEL" --served-model-name "$MODEL" \
    --tp-size "$TP" --context-length "$CONTEXT" --reasoning-parser qwen3 \
    --host "$HOST" --port "$PORT" "$@"
