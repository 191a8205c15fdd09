#!/usr/bin/env bash
# One-step set-up on a fresh Debian/Ubuntu machine: system tools for the sandboxed terminal
# (bubblewrap, tmux), then a virtual environment in .venv with agentworld and its dev tools.
set -euo pipefail
cd "$(dirname "$0")"
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
if [ ${#need[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "install.sh: please install ${need[*]} with your package manager (needed for the real terminal sandbox)" >&2
  fi
fi
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev]'
echo "agentworld installed in .venv ($(.venv/bin/agentworld --version 2>/dev/null || echo 'cli not found'))"
