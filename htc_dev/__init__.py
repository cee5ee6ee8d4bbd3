"""Repository-only tools, not in the wheel: the benchmarks (``python -m htc_dev.bench NAME``), the demo
agent that recorded ``sample_runs/`` (``htc_dev.demo_agent``) and the scripts that train the shipped General
Agent Calibrators (``python -m htc_dev.train_gac``, ``python -m htc_dev.train_gac_prefix``).

They import :mod:`htc_core`; nothing in :mod:`htc_core` imports them.
"""
