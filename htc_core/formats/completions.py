"""Legacy completions: OpenAI ``/v1/completions``, llama.cpp and vLLM.

One response is one step; its logprobs live under ``choices[0].logprobs``::

    {"tokens": [...], "token_logprobs": [...], "top_logprobs": [{token: logprob}, ...], "text_offset": [...]}

Containers (how responses form trajectories) are the same as for
``openai-chat`` (see ``containers``): a ``.json`` array of responses is one
trajectory; JSONL holds one trajectory per line (a list of responses, or an
object with ``id`` and ``responses``). vLLM quirks: -9999 means -inf (a
missing alternative); the k+1 alternatives it may list are de-duplicated by
construction (a dict keyed by token) and sorted. Parsing a response lives in
``shapes`` (``parse_completion``).
"""

from __future__ import annotations

from .containers import ContainerReader
from .shapes import is_completion

NAME = "completions"

_READER = ContainerReader(NAME, is_completion, "legacy completions responses (choices[].logprobs.token_logprobs)")
sniff = _READER.sniff
read_file = _READER.read_file
read = _READER.read
