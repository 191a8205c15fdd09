"""Text signals shared by cleaning and masking: a tokenizer, action/observation bodies, error patterns
(observation bodies and errors come from :mod:`agentworld.domains.failures`, which the simulator reads too).

The statistics of :mod:`agentworld.data.masking` and the retry detection of
:mod:`agentworld.data.process` must agree on what a "token", an "action" and an "error" are, so
both read them from here.

Tokenizer: the default ``regex`` tokenizer splits text into words (letters, digits and ``_``, with
inner ``. / ~ -`` kept, so paths, versions, ids and decimals are one token), paths starting with
``/ . ~ -`` (``/root``, ``../x``, ``-la``) and single punctuation marks. It is deterministic,
language-free and fast; a subword tokenizer can be plugged in with :func:`register_tokenizer`
(or ``"hf:<name or path>"``, which loads a local ``transformers`` tokenizer).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import orjson

from agentworld.domains.failures import observation_body

Tokenizer = Callable[[str], list[str]]

_WORD = r"\w+(?:[./~-]+\w+)*"
TOKEN_RE = re.compile(rf"{_WORD}|[./~-]+{_WORD}|[^\w\s]")
_SEP_UNDERSCORES = r"_+(?:[./~-]+_+)*"
CONTENT_TOKEN_RE = re.compile(rf"(?:[./~-]+)?{_SEP_UNDERSCORES}(?![./~-]*\w)|({_WORD}|[./~-]+{_WORD})")
"""The :data:`TOKEN_RE` tokens that have a letter or digit, as group 1 (other matches leave it empty).

``\\w`` is exactly ``str.isalnum()`` or ``_``, so a word token lacks a letter or digit only when it
is made of underscores (and separators): the first branch consumes exactly those tokens, the
single punctuation marks are skipped over, and what group 1 captures is the filtered token list.
"""
_ALNUM_RE = re.compile(r"[^\W_]")
_TOKENIZERS: dict[str, Tokenizer] = {}


def regex_tokenize(text: str) -> list[str]:
    """Words, numbers, paths and punctuation (see the module docstring); case is kept."""
    return TOKEN_RE.findall(text)


def register_tokenizer(name: str, fn: Tokenizer) -> None:
    """Make ``fn`` selectable by name in :class:`~agentworld.data.masking.MaskConfig`."""
    _TOKENIZERS[name] = fn


def get_tokenizer(name: str = "regex") -> Tokenizer:
    """The tokenizer called ``name``: ``regex``, ``whitespace``, a registered one, or ``hf:<model>``."""
    if name in _TOKENIZERS:
        return _TOKENIZERS[name]
    if name.startswith("hf:"):
        from transformers import AutoTokenizer  # optional: only for subword statistics

        tok = AutoTokenizer.from_pretrained(name[3:], local_files_only=True)
        _TOKENIZERS[name] = tok.tokenize
        return _TOKENIZERS[name]
    raise ValueError(f"unknown tokenizer {name!r}; known: {', '.join(sorted(_TOKENIZERS))}, hf:<model>")


register_tokenizer("regex", regex_tokenize)
register_tokenizer("whitespace", str.split)

# -- action and observation text -------------------------------------------------------------------

_HEADER_RE = re.compile(r"\*\*(?:Action|Current State|Environment Observation):\*\*")
_FENCE_RE = re.compile(r"```(?<![^\n]```)\w*$", re.M)
"""A code fence line, ``^```\\w*$`` (multi-line): written to start with the backticks, so the regex
engine scans for them as a literal instead of trying the pattern at every position; the
look-behind puts them at a line start (after a newline, or at the start of the text)."""


def strip_markup(text: str) -> str:
    """Drop the bench framing (section headers, code fences) so it does not count as shared content."""
    if "**" in text:
        text = _HEADER_RE.sub(" ", text)
    if "```" in text:  # apart: one regex with both alternatives scans several times slower
        text = _FENCE_RE.sub(" ", text)
    return text


def _regex_content_tokens(text: str) -> list[str]:
    return list(filter(None, CONTENT_TOKEN_RE.findall(text)))


def content_tokens(text: str, tokenize: Callable[[str], list[str]] = regex_tokenize, *,
                   observation: bool = False) -> list[str]:
    """Tokens with a letter or digit, the bench framing (and observation header) removed first."""
    text = strip_markup(observation_body(text) if observation else text)
    if tokenize is regex_tokenize:
        return _regex_content_tokens(text)
    has_alnum = _ALNUM_RE.search
    return [t for t in tokenize(text) if has_alnum(t)]


TokenKey = str | bytes
"""A token as the masking statistics compare it: only equality and hashing matter there."""
_SEPARATORS = b"./~-"
_RUN_TABLE = bytes(c if chr(c).isalnum() or chr(c) in "_./~-" else 32 for c in range(128)) + b" " * 128
"""ASCII bytes: word characters and separators kept, every other byte turned into a space."""
_SEPARATOR_AS_DOT = bytes(46 if c in _SEPARATORS else c for c in range(256))


def content_token_keys(text: str, tokenize: Tokenizer = regex_tokenize, *,
                       observation: bool = False) -> list[TokenKey]:
    """:func:`content_tokens` as hashable keys, fast: UTF-8 bytes for the ``regex`` tokenizer.

    Why: tokenising is most of the masking's work, and the regex scans ~10x slower than bytes
    methods. For ASCII text a :data:`TOKEN_RE` word token is exactly a maximal run of word
    characters and separators with its trailing separators removed (leading separators belong to
    the token, inner ones join words), and it is a content token when it has a letter or digit;
    ``bytes.translate`` + ``split`` find those runs in C. Other text goes through the regex and
    is encoded, so every key of the ``regex`` tokenizer is the UTF-8 of its token (equal keys
    exactly when the tokens are equal). Other tokenizers' tokens are returned as they are.
    """
    if tokenize is not regex_tokenize:
        return list(content_tokens(text, tokenize, observation=observation))
    text = strip_markup(observation_body(text) if observation else text)
    if not text.isascii():
        return [t.encode() for t in _regex_content_tokens(text)]
    runs = text.encode().translate(_RUN_TABLE)
    # Most texts have no run that ends with a separator or lacks a letter or digit (one made of
    # separators ends with one; any other has an underscore): their runs are the tokens as they are.
    if runs.find(b"_") < 0 and runs.translate(_SEPARATOR_AS_DOT).find(b". ") < 0 \
            and not runs.endswith((b".", b"/", b"~", b"-")):
        return runs.split()  # type: ignore[return-value]
    return [run.rstrip(_SEPARATORS) for run in runs.split() if run.strip(b"_./~-")]


def normalise_action(text: str) -> str:
    """The command an action sends, comparable across retries.

    Only the part after the last ``**Action:**`` header counts (the first turn also carries the
    current state); code fences are dropped; JSON is re-serialised with sorted keys; any other
    text has its whitespace collapsed.
    """
    body = text.rsplit("**Action:**", 1)[-1]
    body = (_FENCE_RE.sub("", body) if "```" in body else body).strip()
    try:
        return orjson.dumps(orjson.loads(body), option=orjson.OPT_SORT_KEYS).decode()
    except orjson.JSONDecodeError:
        return " ".join(body.split())
