#!/usr/bin/env bash
# verl for tests/train/test_verl.py, installed BESIDE the venv, never into it: verl pins transformers<5.11 and
# hydra needs antlr4 4.9 (the venv has newer of both), and verl's MCP client needs mcp<2 (agentworld needs
# mcp 2). So the pure-Python packages verl imports on CPU go with --no-deps into .verl-deps/ (gitignored),
# and the tests run verl's code in a child process with those folders first on PYTHONPATH
# (tests/verl_child.py); the venv's torch, transformers, ray, pydantic and httpx serve the rest.
#   .verl-deps/agentloop  verl 0.9.1 (AgentLoopBase, register, AgentLoopOutput) and its light imports
#   .verl-deps/mcp        verl 0.7.1, the last release with the MCP tool (MCPBaseTool,
#                         initialize_tools_from_config), fastmcp 2.12.5 and mcp 1.30; layered over agentloop
# No verl release on PyPI ships verl/tools/utils/mcp_clients (no __init__.py, so packaging skipped it:
# 0.4.1-0.7.1 wheels and sdists have MCPBaseTool importing it, 0.8+ dropped the MCP tool), so its two
# files are copied in from tests/verl_deps/mcp_clients (verl's v0.7.0 tag, Apache-2.0, unmodified).
# Usage: bash tests/verl_deps/install.sh [PYTHON]   (`bash install.sh --train` runs it); idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=${1:-$root/.venv/bin/python}
dest=$root/.verl-deps
agentloop=(verl==0.9.1 hydra-core==1.3.8 omegaconf==2.4.0 antlr4-python3-runtime==4.9.3 tensordict==0.10.0
           pyvers==0.1.0 codetiming==1.4.0 cachetools==8.0.2)
mcp=(verl==0.7.1 omegaconf==2.4.0 fastmcp==2.12.5 mcp==1.30.0 pydantic-settings==2.16.3 httpx-sse==0.4.3
     authlib==1.9.10 joserfc==1.8.0 exceptiongroup==1.3.2)
stamp=$(cat "$0" "$here"/mcp_clients/*.py | sha256sum | cut -c1-16)
[ "$(cat "$dest/STAMP" 2>/dev/null)" = "$stamp" ] && exit 0
tmp=$dest.tmp
rm -rf "$tmp"
# antlr4 4.9.3 is an sdist only: build it with the venv's setuptools when that one builds wheels itself
# (70.1+; 10 s less than fetching a build environment). The two folders install side by side.
isolation=()
"$py" -c "import setuptools, sys; sys.exit(tuple(map(int, setuptools.__version__.split('.')[:2])) < (70, 1))" \
  2>/dev/null && isolation=(--no-build-isolation)
"$py" -m pip install -q --no-compile --no-deps "${isolation[@]}" --target "$tmp/agentloop" "${agentloop[@]}" &
first=$!
"$py" -m pip install -q --no-compile --no-deps --target "$tmp/mcp" "${mcp[@]}"
wait "$first"
cp -r "$here/mcp_clients" "$tmp/mcp/verl/tools/utils/mcp_clients"
echo "$stamp" >"$tmp/STAMP"
rm -rf "$dest"
mv "$tmp" "$dest"
echo "verl installed beside the venv in .verl-deps (for tests/train/test_verl.py)"
