"""OpenAI Responses API: ``output[].content[type=output_text].logprobs[]``.

One response is one step: the logprobs of all its ``output_text`` parts, in
order (request them with ``include=["message.output_text.logprobs"]`` and
``top_logprobs=k``). Each logprob entry has the Chat Completions shape
``{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}``.
Containers are those of ``openai-chat`` (see ``containers``: a ``.json``
array of responses is one trajectory; JSONL holds one trajectory per line).
Parsing a response lives in ``shapes`` (``parse_responses_api``).
"""

from __future__ import annotations

from .containers import ContainerReader
from .shapes import is_responses_api

NAME = "responses"

_READER = ContainerReader(NAME, is_responses_api, "Responses API objects (output[].content[].logprobs)")
sniff = _READER.sniff
read_file = _READER.read_file
read = _READER.read
