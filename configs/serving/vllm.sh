#!/usr/bin/env bash
# Serve Qwen-AgentWorld with vLLM. Documented, not run in CI.
# --language-model-only: the checkpoint declares vision parts it does not ship.
# --reasoning-parser qwen3: reasoning comes back in message.reasoning, the answer alone in content.
#
#   MODEL=Qwen/Qwen-AgentWorld-35B-A3B TP=2 bash configs/serving/vllm.sh
#   MODEL=Qwen/Qwen-AgentWorld-397B-A17B TP=8 bash configs/serving/vllm.sh
#   DP=4 TP=2 bash configs/serving/vllm.sh      # 8 GPUs as 4 replicas of 2 (more sessions per second)
#
# Then: agentworld doctor --model-base-url http://127.0.0.1:${PORT:-8000}/v1 --model "$MODEL"
set -euo pipefail
MODEL=${MODEL:-Qwen/Qwen-AgentWorld-35B-A3B}
TP=${TP:-2}
DP=${DP:-1}                 # data-parallel replicas behind one port
CONTEXT=${CONTEXT:-65536}
PORT=${PORT:-8000}
HOST=${HOST:-127.0.0.1}
exec vllm serve "$MODEL" --served-model-name "$MODEL" \
    --tensor-parallel-size "$TP" --data-parallel-size "$DP" --max-model-len "$CONTEXT" \
    --language-model-only --reasoning-parser qwen3 --enable-prefix-caching \
    --host "$HOST" --port "$PORT" "$@"
