"""Environment synthesis: world folders, the stages that generate them from seeds, and their checks.

A world folder (:mod:`agentworld.synth.world`) is one synthesized environment: a scenario, MCP tools,
initial entities and tasks whose success a rule decides. ``agentworld synth envs`` writes them;
``serve mcp --world DIR`` serves them.
"""

from agentworld.synth.world import (
    Entities,
    InitialState,
    PlanStep,
    Provenance,
    Scenario,
    StateCondition,
    Success,
    Task,
    ToolDef,
    ToolStep,
    TraceCondition,
    Verdict,
    World,
    WorldDoc,
    evaluate,
    final_state,
    load_tasks,
    load_world,
    render_entities,
    save_world,
)

__all__ = ["Entities", "InitialState", "PlanStep", "Provenance", "Scenario", "StateCondition", "Success",
           "Task", "ToolDef", "ToolStep", "TraceCondition", "Verdict", "World", "WorldDoc", "evaluate",
           "final_state", "load_tasks", "load_world", "render_entities", "save_world"]
