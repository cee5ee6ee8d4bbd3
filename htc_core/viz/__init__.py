"""The plotly figures, one package for the dashboard (:mod:`htc_core.app`, the pages) and the HTML report
(:mod:`htc_core.htmlreport`): every figure is a function of result objects and frames -> ``go.Figure``.

- ``plots``: the shared style (colours, layout, escaping) and the general figures (reliability, histograms,
  weights, projections, token colouring);
- ``experiment_plots``: transfer heatmaps, ablation bars, selection levels, learning curves;
- ``ab_plots``, ``gam_plots``, ``inspector_plots``, ``prefix_plots``, ``selective_plots``: the figures of one
  view each.

Needs the ``[app]`` extra (plotly). Imports the core (and the experiments' result objects); never the app,
the HTML report or the command line.
"""

__all__: list[str] = []      # the figures are imported from their modules (htc_core.viz.plots, ...)
