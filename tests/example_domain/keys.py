"""What the retrieval model compares in the notes domain: a neighbour must share the command's verb."""

from __future__ import annotations

from agentworld.domains.retrieval_keys import ActionKey, ToolCallKeys


class NoteKeys(ToolCallKeys):
    """``get a`` is answered from recorded ``get`` commands only; the rest is the default (tool calls)."""

    def key(self, action: str) -> ActionKey:
        words = action.split()
        return ActionKey(" ".join(words), group=words[0] if words else None)


KEYS = NoteKeys()
