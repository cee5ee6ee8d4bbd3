"""The dashboard side of HTC: the only part of ``htc_core`` (with ``bench``) that imports Streamlit, DuckDB,
Plotly or UMAP. Nothing below it imports it.

Data side (no Streamlit):
  ``store``      the DuckDB run store (run sets, cached features, models, settings)
  ``locking``    exclusive access to its file across threads and processes
  ``columnar``   a trace set as the store's Arrow tables, and back
  ``ingest``     uploads and the shipped sample runs into the store
  ``workspace``  the aligned bundle the pages read (trace set, features, baselines) and ``browse``
  ``views``      page view-models: the tables and choices the pages show
  ``trajectory_view``  the inspector's whole trajectory: each step's input, tokens, tool, observation, error
  ``plots``      Plotly figures drawn from result objects (no maths)
  ``projection`` t-SNE / UMAP of the feature matrix, and the instant PCA preview

Streamlit glue (pages import the facade ``ui``):
  ``session``    configuration, session-state keys, cached store and workspaces, settings, selection
  ``layout``     the guard, the error boundary, the sidebar, deep links, inert markdown
  ``compute``    long computations run once per input with a progress bar (evaluation, fits, projections)
  ``projection_job``  Feature space: the PCA at once, UMAP / t-SNE in a background job with a status line
  ``upload``     upload handling
  ``trajectory_panel``  draws a ``trajectory_view`` (answer vs gold, the steps, folded long texts)
"""
