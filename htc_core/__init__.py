"""HTC: Holistic Trajectory Calibration for LLM agents."""

__version__ = "0.1.0"
