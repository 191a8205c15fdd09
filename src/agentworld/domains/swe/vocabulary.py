"""The SWE prompt's vocabulary: the coding-agent tools' calls and the layouts each tool answers with
(:mod:`agentworld.domains.vocabulary`)."""

from __future__ import annotations

from agentworld.domains.actions import tool_call
from agentworld.domains.swe.record import TOOLS
from agentworld.domains.vocabulary import Call, Layout, PromptVocabulary, described_tools


def calls(action: str) -> list[Call]:
    found = tool_call(action.split("**Action:**", 1)[-1])
    return [Call(found[0], frozenset(found[1]))] if found else []


def _only(*tools: str) -> frozenset[str]:
    return frozenset(tools)


LAYOUTS = (
    Layout("shell result", r"\ACommand: .*\nDirectory: ", ("`Command: <command>`", "`Exit Code: <n>`",
           "`Process Group PGID: <pid>`"), _only("run_shell_command")),
    Layout("file text", r"\A", ("the file's text as is",), _only("read_file")),
    Layout("truncated file", r"\AIMPORTANT: The file content has been truncated\.",
           ("`IMPORTANT: The file content has been truncated.`",)),
    Layout("file not found", r"\AFile not found: ", ("`File not found: <path>`",), _only("read_file")),
    Layout("path is a folder", r"\APath is a directory, not a file: ",
           ("`Path is a directory, not a\n  file: <path>`",)),
    Layout("written", r"\ASuccessfully (?:created and wrote to new file|overwrote file): ",
           ("`Successfully created and wrote to new file: <path>.`",)),
    Layout("replaced", r"\ASuccessfully modified file: ",
           ("`Successfully modified file: <path> (1 replacements).`",)),
    Layout("edit failed", r"\AFailed to edit, ", ("0 occurrences found for old_string",)),
    Layout("edit of a missing file", r"\AFile not found\. Cannot apply edit\.",
           ("`File not found. Cannot apply edit.",)),
    Layout("no change", r"\ANo changes to apply\. ", ("`No changes to apply.",)),
    Layout("listing", r"\ADirectory listing for ", ("`Directory listing for <path>:`",)),
    Layout("listing failed", r"\AError listing directory: ", ("`Error listing directory: ",)),
    Layout("glob", r"\AFound \d+ file\(s\) matching ", ("`Found <n> file(s) matching",)),
    Layout("glob empty", r"\ANo files found matching pattern ", ("`No files found matching",)),
    Layout("search", r"\AFound \d+ match(?:es)? for pattern ", ("`Found <n> matches for pattern",)),
    Layout("search empty", r"\ANo matches found for pattern ", ("`No matches found for pattern",)),
    Layout("bad pattern", r"\AInvalid regular expression pattern provided: ",
           ("`Invalid regular expression pattern provided: ",)),
    Layout("todos", r"\ATodos have been modified successfully\.",
           ("`Todos have been modified successfully.",)),
    Layout("todos cleared", r"\ATodo list has been cleared\.", ("`Todo list has been cleared.`",)),
    Layout("outside the workspace", r"\AFile path must be within one of the workspace directories: ",
           ("`File path must be within one of the workspace\n  directories: /app`",)),
    Layout("relative path", r"\AFile path must be absolute",
           ("`File path must be absolute, but was relative",)),
    Layout("tool error", r"\AError: ", ("`Error: ",)),
)

VOCABULARY = PromptVocabulary(calls=calls, described=described_tools, layouts=LAYOUTS,
                              offered=TOOLS.__contains__)
