"""The Calibration page's "Adapt the GAC with these N labels" section (AppTest on 50 real sample runs)."""

from test_app import app, go, problems, sample_dir  # noqa: F401 (fixtures)


def test_adapt_the_gac_on_the_calibration_page(app):  # noqa: F811
    app.run()
    go(app, "calibration")
    assert "Adapt the shipped GAC with these labels" in [s.value for s in app.subheader]
    [button] = [b for b in app.button if b.label.startswith("Adapt the GAC with these")]
    assert "51 labels" in button.label
    button.click().run()
    assert not problems(app), problems(app)
    [table] = [d.value for d in app.dataframe if "AUROC ↑" in d.value.columns and "GAC adapted" in set(d.value.method)]
    assert set(table.method) == {"GAC zero-shot", "HTC from scratch", "GAC adapted"}
    assert any("Adapted model's choice" in m.value for m in app.markdown)
    assert any("in-sample" in c.value for c in app.caption)      # the shipped GAC saw arithmetic runs
