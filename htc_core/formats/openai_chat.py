"""OpenAI Chat Completions responses: ``choices[].logprobs.content[].{token, logprob, bytes, top_logprobs[]}``.

A trajectory is a ``.json`` array of responses (one trajectory per file), a
``.json`` object ``{"id": ..., "responses": [...], "success": ...}`` or a
single response, or JSONL with one trajectory per line (see ``containers``
for every container and wrapper accepted). A streamed call (a list of
``chat.completion.chunk`` objects) is reassembled into one step.

Parsing a response lives in ``shapes`` (``parse_chat``, ``parse_chunks``),
shared with the other OpenAI-shaped readers.
"""

from __future__ import annotations

from .containers import ContainerReader
from .shapes import is_chat

NAME = "openai-chat"

_READER = ContainerReader(NAME, is_chat, "Chat Completions responses (choices[].logprobs.content)")
sniff = _READER.sniff
read_file = _READER.read_file
read = _READER.read
