"""The sidebar's Models chips (docs/ui-review.md 37): short labels that fit a chip and never read alike."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from htc_core.app.layout import chip_label, chip_labels

PART = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.", min_size=1, max_size=12)
NAME = st.lists(PART, min_size=1, max_size=6).flatmap(
    lambda parts: st.lists(st.sampled_from("-_/: "), min_size=len(parts) - 1, max_size=len(parts) - 1).map(
        lambda seps: parts[0] + "".join(s + p for s, p in zip(seps, parts[1:]))))


def test_the_sample_models_read_whole_in_a_chip():
    labels = chip_labels(["SmolLM2-135M-greedy", "SmolLM2-135M-sampled-t0.7", "Gemma3-270M-greedy",
                          "Gemma3-270M-sampled-t0.7", "llama2-70b"])
    assert labels == {"SmolLM2-135M-greedy": "SmolLM2…greedy", "SmolLM2-135M-sampled-t0.7": "SmolLM2…t0.7",
                      "Gemma3-270M-greedy": "Gemma3…greedy", "Gemma3-270M-sampled-t0.7": "Gemma3…t0.7",
                      "llama2-70b": "llama2-70b"}
    assert chip_label("meta-llama/Llama-3.1-8B-Instruct") == "Llama…Instruct"


@settings(max_examples=300, deadline=None)
@given(names=st.lists(NAME, min_size=1, max_size=12, unique=True), width=st.integers(8, 24))
def test_labels_fit_and_never_read_alike(names, width):
    labels = chip_labels(names, width)
    assert list(labels) == names
    assert len(set(labels.values())) == len(names)                   # no two chips read alike
    for name, label in labels.items():
        if len(name) <= width:
            assert label == name                                     # a name that fits is shown whole
        else:
            assert len(label) <= width or label == name              # shortened to fit, or whole where shared
        assert len(chip_label(name, width)) <= max(width, 0) or len(name) <= width
