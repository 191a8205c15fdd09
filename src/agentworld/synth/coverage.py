"""How often each curriculum of a world actually injects a fault: reference plans under each control.

Why: a fault rule fires only on calls it applies to and only where it changes something (one page
of a short list is not pagination; a stale replay needs an earlier read), so a world's curricula
can look complete and inject nothing. This runs every task's reference plan under every control
spec for several episode seeds and counts the episodes that met at least one effective fault.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable

from agentworld.models.base import ChatBackend
from agentworld.synth.world import World


async def curriculum_coverage(worlds: Iterable[World], backend: ChatBackend,
                              seeds: Iterable[int] = range(10)) -> dict[str, tuple[int, int]]:
    """``{control: (episodes with an effective fault, episodes)}`` over every world, task and seed."""
    from agentworld.sim.session import Simulator

    hit: Counter[str] = Counter()
    total: Counter[str] = Counter()
    chosen = list(seeds)
    for world in worlds:
        for task in world.tasks:
            for name, spec in sorted(world.controls.items()):
                for seed in chosen:
                    sim = Simulator(backend)
                    await sim.areset(world.to_spec(spec), seed=seed)
                    faulted = False
                    for step in task.reference_plan:
                        result = await sim.astep(json.dumps({"name": step.tool, "arguments": step.arguments}))
                        faulted |= result.fault is not None
                    hit[name] += faulted
                    total[name] += 1
    return {name: (hit[name], total[name]) for name in sorted(total)}
