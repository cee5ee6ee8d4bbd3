"""Freed memory kept for reuse: a process that computes in pieces gets its buffers back instead of fresh pages.

glibc's ``malloc`` serves a block of more than 128 kB (a threshold it raises as such blocks are freed, up to
32 MB) with its own ``mmap`` and gives it back to the kernel when it is freed, and it gives back the top of its
heap once more than twice that threshold is free there. A process that allocates the same few MB again for each
piece of its input (``htc features``: a trace set and the features' temporaries per piece of 2^17 tokens,
``htc_core.features.pieces``) so touches fresh pages again and again: each costs a page fault and the kernel's
zeroing, system time that grew with the machine's load (issue 29: on the 112 MB bench file, about 1,800 page
faults per piece after the first two without it, none with it). :func:`keep_freed_memory` sets both thresholds
once for the process (``mallopt``), so blocks up to 32 MB come from the heap and up to 64 MB of freed memory stay
there for the next piece. It is a process-wide choice: the command-line entry points that own their process
call it; the library never does.
"""

from __future__ import annotations

__all__ = ["keep_freed_memory"]

# mallopt parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def keep_freed_memory(mmap_threshold: int = 32 << 20, trim_threshold: int = 64 << 20) -> bool:
    """Keep freed blocks in the heap for reuse (glibc); nothing elsewhere.

    Parameters
    ----------
    mmap_threshold : int, default=32 MB
        Blocks up to this size come from the heap (glibc's largest value on 64-bit).
    trim_threshold : int, default=64 MB
        Free memory at the top of the heap kept up to this size.

    Returns
    -------
    bool
        Whether both were set (False where the C library has no ``mallopt``: musl, macOS, Windows).

    Examples
    --------
    >>> from htc_core.heap import keep_freed_memory
    >>> keep_freed_memory() in (True, False)
    True
    """
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(_M_MMAP_THRESHOLD, int(mmap_threshold))) and bool(mallopt(_M_TRIM_THRESHOLD,
                                                                                  int(trim_threshold)))
