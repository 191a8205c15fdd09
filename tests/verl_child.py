"""verl's own code for tests/train/test_verl.py, run in a child process whose PYTHONPATH starts with verl.

verl cannot share the test process: it needs packages that the venv holds at other versions (antlr4 4.9
for hydra, mcp<2 for its MCP client), so ``tests/verl_deps/install.sh`` puts them in ``.verl-deps/``
and the tests run ``python tests/verl_child.py COMMAND ARGS`` with those folders first on PYTHONPATH.
Each command prints one JSON line, which the test checks:

- ``agent-loop MOCK_URL TOKENIZER_DIR``: verl's ``AgentLoopOutput`` fields, the registry entry of
  ``agentworld``, and the output of :class:`~agentworld.train.verl_loop.AgentWorldAgentLoop` for one
  episode against the mock world model, driven through verl's own ``TokenOutput`` server contract.
- ``mcp-loader TOOL_CONFIG``: verl's ``initialize_tools_from_config`` on the generated tool config,
  and one call of a loaded ``MCPBaseTool``.

The scripted policy and the world spec live here so that the in-process tests use the same ones.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

TOOLS = Path(__file__).parent / "fixtures" / "airline_tools.json"
REPLIES = ['{"tool_name": "get_user_details", "arguments": {"user_id": "sara_doe_496"}}',
           '{"tool_name": "get_reservation_details", "arguments": {"reservation_id": "ABC123"}}', "DONE"]


def scripted_policy(tokenizer: Any) -> tuple[Any, list[list[int]]]:
    """A ``generate`` that answers with REPLIES in turn (then DONE), ending each with the EOS token."""
    generated: list[list[int]] = []

    async def generate(ids: list[int], params: dict[str, Any]) -> tuple[list[int], list[float] | None]:
        assert params == {"temperature": 1.0}
        reply = REPLIES[min(len(generated), len(REPLIES) - 1)]
        out = [*tokenizer.encode(reply, add_special_tokens=False), tokenizer.eos_token_id]
        generated.append(out)
        return out, [-0.5] * len(out)

    return generate, generated


def airline_spec(controls: Any = None) -> Any:
    """The airline tools as a :class:`~agentworld.sim.types.WorldSpec` (``controls``: a ControlSpec)."""
    from agentworld.sim.types import ControlSpec, WorldSpec

    return WorldSpec(domain="mcp", tools=json.loads(TOOLS.read_text())["tools"],
                     initial_state="Airline booking database.", controls=controls or ControlSpec())


def agent_loop(mock_url: str, tokenizer_dir: str) -> dict[str, Any]:
    """One episode through verl's agent-loop classes; the output as verl built and validated it."""
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer
    from verl.experimental.agent_loop import agent_loop as module
    from verl.workers.rollout.replica import TokenOutput

    from agentworld.train.verl_loop import AgentWorldAgentLoop

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir, local_files_only=True)
    generate, generated = scripted_policy(tokenizer)

    class Server:
        async def generate(self, *, request_id: str, prompt_ids: list[int], sampling_params: dict[str, Any],
                           **_: Any) -> Any:
            ids, logprobs = await generate(prompt_ids, sampling_params)
            return TokenOutput(token_ids=ids, log_probs=logprobs)

    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {"response_length": 4096}}, "data": {}})
    loop = AgentWorldAgentLoop(trainer_config=module.DictConfigWrap(config), server_manager=Server(),
                               tokenizer=tokenizer, processor=None, dataset_cls=None,
                               data_config=module.DictConfigWrap(config.data), model="mock",
                               model_base_url=mock_url, max_turns=5)
    row = {"raw_prompt": [{"role": "user", "content": "Find Sara."}],
           "agentworld": json.dumps({"spec": airline_spec().model_dump(mode="json"), "seed": 1})}
    output = asyncio.run(loop.run({"temperature": 1.0}, **row))
    tensors = output.as_dict()
    fields = module.AgentLoopOutput.model_fields
    return {
        "verl": str(Path(module.__file__).resolve()),
        "fields": sorted(fields), "required": sorted(n for n, f in fields.items() if f.is_required()),
        "registry": module._agent_loop_registry.get("agentworld"),
        "output_class": f"{type(output).__module__}.{type(output).__qualname__}",
        "is_agent_loop_output": isinstance(output, module.AgentLoopOutput),
        "output": {name: getattr(output, name) for name in
                   ("prompt_ids", "response_ids", "response_mask", "response_logprobs", "reward_score",
                    "num_turns", "extra_fields")},
        "generated": generated,
        "shapes": {name: list(tensors[name].shape) for name in ("responses", "response_mask")},
    }


def mcp_loader(tool_config: str) -> dict[str, Any]:
    """verl's MCP tool loader on ``tool_config``, then one tool call through the loaded tool."""
    from verl.tools.utils.tool_registry import initialize_tools_from_config

    tools = initialize_tools_from_config(tool_config)
    tool = next(t for t in tools if t.name == "get_user_details")

    async def call() -> str:
        instance_id, _ = await tool.create()
        response, _reward, _metrics = await tool.execute(instance_id, {"user_id": "sara_doe_496"})
        return str(response.text)

    return {"verl": str(Path(sys.modules["verl"].__file__ or "").resolve()),
            "names": [t.name for t in tools], "classes": sorted({type(t).__name__ for t in tools}),
            "schema": tools[0].tool_schema.model_dump()["function"]["name"], "text": asyncio.run(call())}


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    report = {"agent-loop": agent_loop, "mcp-loader": mcp_loader}[command](*args)
    print(json.dumps(report, default=str))
