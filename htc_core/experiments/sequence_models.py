"""LSTM and Transformer baselines on the raw per-token top-k log-probabilities (paper appendix
"Learning-based Baselines"), and the sequence featurization they read.

**Featurization** (:func:`token_sequences`, our decision; the paper says only "each input step corresponds
to the top-5 token log-probabilities"): one row per generated token of the whole trajectory (all steps
concatenated, in order), ``1 + top_k`` channels: the chosen token's log-probability, then the top-k
alternatives' log-probabilities sorted descending. Missing alternatives (runs recorded without top-k, or
fewer than k listed) are set to ``FLOOR`` = -20 (probability ~2e-9: "nothing else known"), every value is
clipped to [-20, 0]. **Length**: a trajectory longer than ``max_len`` (default 256) tokens is mean-pooled
into ``max_len`` contiguous, near-equal bins, so the model still sees it from the first token to the last
(truncating would drop either the plan or the final answer); shorter ones are NaN-padded at the end
(padding is masked, never read). ``sample_runs/`` trajectories have 8-192 tokens, so nothing is pooled there.
Channels are standardized with the training tokens' mean and std inside ``fit``.

Estimators take that 3-D array ``X [n, L, 1 + top_k]`` (NaN rows = padding), follow scikit-learn's
conventions (``fit`` / ``predict_proba`` / ``get_params``, seeded by ``random_state``) and need PyTorch
(extra ``[learning]``); this module imports torch only inside ``fit``.

**Speed** (the paper's hyperparameters unchanged). X becomes one float32 tensor and one padding mask per fit
(not per batch); every mini-batch, validation and prediction chunk is cut to its own longest run (most
``sample_runs/`` runs have ~30 tokens, X is padded to the longest, up to 192), validation and prediction run
in length-sorted chunks under ``torch.inference_mode``; the LSTM runs on the zero-padded batch (oneDNN's fused
kernel) and reads its output at each run's last token instead of packing. All of this is numerically the
same model: padding after a run is masked in attention and pooling, and a unidirectional LSTM's output at
a run's last token never reads what follows. One difference is not numerical: the Transformer's dropout
draws its masks in the (now shorter) batch's shape, so its training sees other (seeded, reproducible)
dropout masks than uncut batches would: a different draw of the same procedure. The LSTM's dropout acts
on the final hidden state only, so its whole fit is unchanged (tests/test_learning_trim.py checks both
to 1e-5: the LSTM fit, the Transformer's predictions, and its fit without dropout).
"""

from __future__ import annotations

import numpy as np

from .learning import LearningBaseline, check_binary, require, torch_fit, torch_proba

__all__ = ["token_sequences", "LSTMBaseline", "TransformerBaseline", "FLOOR", "DEFAULT_MAX_LEN"]

FLOOR = -20.0
DEFAULT_MAX_LEN = 256


def token_sequences(ts, *, top_k: int = 5, max_len: int = DEFAULT_MAX_LEN) -> np.ndarray:
    """The runs as token sequences for the sequence models: the chosen and top-k log-probabilities per token.

    One row per generated token of the whole trajectory (all steps concatenated), ``1 + top_k`` channels: the
    chosen token's log-probability, then the alternatives' sorted descending; missing alternatives are
    ``FLOOR`` (-20) and every value is clipped to [-20, 0]. A trajectory longer than ``max_len`` tokens is
    mean-pooled into ``max_len`` near-equal bins; shorter ones are NaN-padded at the end.

    Parameters
    ----------
    ts : TraceSet
        The runs.
    top_k : int, default 5
        Alternatives per token (channels ``1 + top_k``).
    max_len : int, default 256
        The longest sequence; longer trajectories are pooled to it.

    Returns
    -------
    numpy.ndarray of shape (n_runs, L, 1 + top_k)
        float64, ``L = min(max_len, longest trajectory)``; NaN rows are padding.

    Raises
    ------
    ValueError
        If ``ts`` is not a TraceSet or ``top_k`` / ``max_len`` is invalid.

    Examples
    --------
    >>> import numpy as np
    >>> from htc_core.formats import load
    >>> from htc_core.experiments.sequence_models import token_sequences
    >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")
    >>> X = token_sequences(ts)
    >>> X.shape                                     # 8 runs, the longest 27 tokens, 1 + 5 channels
    (8, 27, 6)
    >>> np.isnan(X[:, :, 0]).sum(axis=1)            # padding after the shorter runs
    array([1, 2, 2, 2, 0, 2, 2, 2])
    >>> X[0, 0].round(3)                            # the first token: chosen, then the top-5
    array([-0.009, -0.009, -6.082, -7.318, -7.324, -7.409])
    >>> token_sequences(ts, top_k=2, max_len=8).shape     # pooled to 8 positions
    (8, 8, 3)
    """
    from ..traces import TraceSet

    if not isinstance(ts, TraceSet):
        raise ValueError(f"ts must be a TraceSet, got {type(ts).__name__}")
    for name, v, lo in (("top_k", top_k, 0), ("max_len", max_len, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    n = ts.n_trajectories
    tok = np.full((ts.n_tokens, 1 + top_k), FLOOR)
    tok[:, 0] = ts.logprob
    k = min(top_k, ts.k)
    if k:
        alt = ts.top_logprobs[:, :k]
        tok[:, 1:1 + k] = np.where(np.isnan(alt), FLOOR, alt)
    tok = np.clip(np.nan_to_num(tok, nan=FLOOR, neginf=FLOOR), FLOOR, 0.0)
    bounds = ts.step_offsets[ts.traj_offsets]
    lengths = np.diff(bounds)
    L = int(min(max_len, max(1, lengths.max(initial=1))))
    out = np.full((n, L, 1 + top_k), np.nan)
    for i in range(n):
        seq = tok[bounds[i]:bounds[i + 1]]
        if len(seq) > L:
            edges = np.linspace(0, len(seq), L + 1).round().astype(np.int64)
            seq = np.add.reduceat(seq, edges[:-1], axis=0) / np.diff(edges)[:, None]
        out[i, :len(seq)] = seq
    return out


def _check_seq(X, y=None):
    """X (and y) checked: a 3-D float array with NaN padding, 0/1 labels with both outcomes."""
    if y is not None:
        X, y = check_binary(X, y, allow_nd=True)
    else:
        from sklearn.utils.validation import check_array
        X = check_array(X, ensure_all_finite="allow-nan", allow_nd=True, dtype=np.float64)
    if X.ndim != 3:
        raise ValueError(f"X must be a 3-D array [n_runs, n_tokens, channels] (token_sequences), got shape {X.shape}")
    return X, y


class _SequenceBaseline(LearningBaseline):
    """What the LSTM and the Transformer share: input checks, channel scaling, prediction."""

    # cut every mini-batch / prediction chunk to its own longest run (see the module doc); False runs every
    # batch at the full padded length of X: the reference path the tests compare against
    _trim_batches = True

    def _fit_common(self, X, y):
        """Checked X and y; the channels' mean and std on the training tokens."""
        X, y = _check_seq(X, y)
        require("torch", f"the {type(self).__name__.removesuffix('Baseline')} baseline")
        self.input_shape_ = X.shape[2:]
        flat = X.reshape(-1, X.shape[2])
        flat = flat[~np.isnan(flat).any(axis=1)]
        self.mu_ = flat.mean(axis=0) if len(flat) else np.zeros(X.shape[2])
        sd = flat.std(axis=0) if len(flat) else np.ones(X.shape[2])
        self.sd_ = np.where(sd > 1e-9, sd, 1.0)
        self.classes_ = np.array([0, 1])
        return X, y

    def _scale(self, X):
        return (X - self.mu_) / self.sd_   # NaN padding stays NaN (the modules mask it)

    def predict_proba(self, X) -> np.ndarray:
        """Failure and success probabilities of runs given as token sequences (columns 0 and 1)."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "classes_")
        X, _ = _check_seq(X)
        if X.shape[2:] != self.input_shape_:
            raise ValueError(f"X must have {self.input_shape_[0]} channels like the training data, got {X.shape[2]}")
        return torch_proba(self.module_, self._scale(X), sequences=True, trim=self._trim_batches)


class LSTMBaseline(_SequenceBaseline):
    """Single-layer unidirectional LSTM on token sequences (PyTorch, the ``[learning]`` extra).

    Its last hidden state (at each run's true length) goes through a 64 -> 32 -> 32 -> 2 feed-forward classifier
    with ReLU and dropout; Adam, early stopping on a stratified 20 % validation part (paper values; the paper
    gives no batch size: 16). One CPU thread, seeded.

    Parameters
    ----------
    hidden_size : int, default 64
        The LSTM's hidden size.
    dropout : float, default 0.4
        Dropout in the classifier.
    lr : float, default 0.001
        Adam's learning rate.
    batch_size : int, default 16
        Mini-batch size.
    max_epochs : int, default 100
        The most epochs.
    patience : int, default 8
        Epochs without a better validation log-loss before stopping.
    random_state : int, default 0
        The seed of the weights, the batches and the validation split.

    Examples
    --------
    PyTorch is an optional extra (not installed in the project's CI: from PyPI it brings 2.6 GB of CUDA wheels),
    so the lines that fit are skipped here:

    >>> from htc_core.formats import load
    >>> from htc_core.experiments.sequence_models import token_sequences, LSTMBaseline
    >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")     # 8 runs, 3 successes
    >>> X = token_sequences(ts)
    >>> lstm = LSTMBaseline(hidden_size=16, max_epochs=10)
    >>> lstm.get_params()["hidden_size"], X.shape[2]
    (16, 6)
    >>> lstm.fit(X, ts.labels).predict_proba(X).shape              # doctest: +SKIP
    (8, 2)
    """

    def __init__(self, hidden_size: int = 64, dropout: float = 0.4, lr: float = 1e-3, batch_size: int = 16,
                 max_epochs: int = 100, patience: int = 8, random_state: int = 0):
        self.hidden_size = hidden_size
        self.dropout = dropout
        self.lr = lr
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.random_state = random_state

    def fit(self, X, y):
        """Train the LSTM on token sequences of labeled runs.

        Channels are standardized with the training tokens' mean and std; padding stays masked.

        Parameters
        ----------
        X : array-like of shape (n_runs, n_tokens, channels)
            :func:`token_sequences` of the runs (NaN rows: padding).
        y : array-like of shape (n_runs,)
            0/1 labels, both present.

        Returns
        -------
        LSTMBaseline
            Fitted: ``module_``, ``mu_``, ``sd_``, ``n_epochs_``, ``classes_``.

        Raises
        ------
        ValueError
            If ``X`` is not 3-D or ``y`` is not 0/1 with both outcomes.
        MissingExtraError
            If PyTorch is not installed.

        Examples
        --------
        PyTorch is an optional extra (not installed in the project's CI: from PyPI it brings 2.6 GB of CUDA
        wheels), so the lines that fit are skipped here:

        >>> from htc_core.formats import load
        >>> from htc_core.experiments.sequence_models import token_sequences, LSTMBaseline
        >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")     # 8 runs, 3 successes
        >>> X = token_sequences(ts)
        >>> lstm = LSTMBaseline(max_epochs=10).fit(X, ts.labels)           # doctest: +SKIP
        >>> lstm.classes_                                                  # doctest: +SKIP
        array([0, 1])
        """
        X, y = self._fit_common(X, y)
        import torch

        torch.manual_seed(int(self.random_state))
        self.module_ = _lstm_module(torch, X.shape[2], int(self.hidden_size), float(self.dropout))
        self.n_epochs_ = torch_fit(self.module_, self._scale(X), y, lr=self.lr, batch_size=int(self.batch_size),
                                   max_epochs=int(self.max_epochs), patience=int(self.patience), weight_decay=0.0,
                                   seed=int(self.random_state), sequences=True, trim=self._trim_batches)
        return self


class TransformerBaseline(_SequenceBaseline):
    """One-layer Transformer encoder on token sequences (PyTorch, the ``[learning]`` extra).

    Learnable positional embeddings, attention pooling over the real tokens, classifier 32 -> 16 -> 2; Adam,
    early stopping (paper values). The paper's embeddings go up to length 2000; ours to ``max_positions`` = 256,
    the length :func:`token_sequences` pools to by default (a longer X is a ValueError). One CPU thread, seeded.

    Parameters
    ----------
    d_model : int, default 32
        The model dimension.
    n_heads : int, default 2
        Attention heads.
    dim_feedforward : int, default 64
        The encoder's feed-forward width.
    dropout : float, default 0.3
        Dropout in the encoder and the classifier.
    max_positions : int, default 256
        The longest sequence (positional embeddings).
    lr : float, default 0.001
        Adam's learning rate.
    batch_size : int, default 4
        Mini-batch size.
    max_epochs : int, default 100
        The most epochs.
    patience : int, default 8
        Epochs without a better validation log-loss before stopping.
    random_state : int, default 0
        The seed of the weights, the batches, the dropout masks and the validation split.

    Examples
    --------
    PyTorch is an optional extra (not installed in the project's CI: from PyPI it brings 2.6 GB of CUDA wheels),
    so the lines that fit are skipped here:

    >>> from htc_core.formats import load
    >>> from htc_core.experiments.sequence_models import token_sequences, TransformerBaseline
    >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")     # 8 runs, 3 successes
    >>> X = token_sequences(ts)
    >>> model = TransformerBaseline(max_positions=32, max_epochs=10)
    >>> model.get_params()["d_model"], X.shape[1] <= model.max_positions
    (32, True)
    >>> model.fit(X, ts.labels).predict_proba(X).shape             # doctest: +SKIP
    (8, 2)
    """

    def __init__(self, d_model: int = 32, n_heads: int = 2, dim_feedforward: int = 64, dropout: float = 0.3,
                 max_positions: int = DEFAULT_MAX_LEN, lr: float = 1e-3, batch_size: int = 4, max_epochs: int = 100,
                 patience: int = 8, random_state: int = 0):
        self.d_model = d_model
        self.n_heads = n_heads
        self.dim_feedforward = dim_feedforward
        self.dropout = dropout
        self.max_positions = max_positions
        self.lr = lr
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.random_state = random_state

    def fit(self, X, y):
        """Train the Transformer on token sequences of labeled runs.

        Channels are standardized with the training tokens' mean and std; padding stays masked.

        Parameters
        ----------
        X : array-like of shape (n_runs, n_tokens, channels)
            :func:`token_sequences` of the runs (NaN rows: padding).
        y : array-like of shape (n_runs,)
            0/1 labels, both present.

        Returns
        -------
        TransformerBaseline
            Fitted: ``module_``, ``mu_``, ``sd_``, ``n_epochs_``, ``classes_``.

        Raises
        ------
        ValueError
            If ``X`` is not 3-D or ``y`` is not 0/1 with both outcomes, or ``X`` has more positions than
            ``max_positions``.
        MissingExtraError
            If PyTorch is not installed.

        Examples
        --------
        PyTorch is an optional extra (not installed in the project's CI: from PyPI it brings 2.6 GB of CUDA
        wheels), so the lines that fit are skipped here:

        >>> from htc_core.formats import load
        >>> from htc_core.experiments.sequence_models import token_sequences, TransformerBaseline
        >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")     # 8 runs, 3 successes
        >>> X = token_sequences(ts)
        >>> model = TransformerBaseline(max_epochs=10).fit(X, ts.labels)   # doctest: +SKIP
        >>> 1 <= model.n_epochs_ <= 10                                      # doctest: +SKIP
        True
        """
        X, y = self._fit_common(X, y)
        if X.shape[1] > int(self.max_positions):
            raise ValueError(f"X has {X.shape[1]} positions but max_positions is {self.max_positions}; build X with "
                             f"token_sequences(..., max_len={self.max_positions})")
        import torch

        torch.manual_seed(int(self.random_state))
        self.module_ = _transformer_module(torch, X.shape[2], int(self.d_model), int(self.n_heads),
                                           int(self.dim_feedforward), float(self.dropout), int(self.max_positions))
        self.n_epochs_ = torch_fit(self.module_, self._scale(X), y, lr=self.lr, batch_size=int(self.batch_size),
                                   max_epochs=int(self.max_epochs), patience=int(self.patience), weight_decay=0.0,
                                   seed=int(self.random_state), sequences=True, trim=self._trim_batches)
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Failure and success probabilities of runs given as token sequences.

        Parameters
        ----------
        X : array-like of shape (n_runs, n_tokens, channels)
            :func:`token_sequences` of the runs, with the training data's channels.

        Returns
        -------
        numpy.ndarray of shape (n_runs, 2)
            Column 1 is the success probability.

        Raises
        ------
        ValueError
            If ``X`` has more positions than ``max_positions`` or other channels than the training data.

        Examples
        --------
        PyTorch is an optional extra (not installed in the project's CI: from PyPI it brings 2.6 GB of CUDA
        wheels), so the lines that fit are skipped here:

        >>> from htc_core.formats import load
        >>> from htc_core.experiments.sequence_models import token_sequences, TransformerBaseline
        >>> ts, _ = load("sample_runs/_examples/facts_Gemma3-270M-greedy.jsonl")     # 8 runs, 3 successes
        >>> X = token_sequences(ts)
        >>> model = TransformerBaseline(max_epochs=10).fit(X, ts.labels)   # doctest: +SKIP
        >>> model.predict_proba(X).sum(axis=1).round(6)                     # doctest: +SKIP
        array([1., 1., 1., 1., 1., 1., 1., 1.])
        """
        X, _ = _check_seq(X)
        if X.shape[1] > int(self.max_positions):
            raise ValueError(f"X has {X.shape[1]} positions but max_positions is {self.max_positions}")
        return super().predict_proba(X)


# ------------------------------------------------------------------ the torch modules (built lazily)
# forward(x, pad): x float32 [B, L, C] with padding zeroed, pad bool [B, L] True at padding (both built once
# per fit by learning._TorchInputs, and cut to the batch's longest run)
def _lstm_module(torch, n_in: int, hidden: int, dropout: float):
    nn = torch.nn

    class LSTMNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(n_in, hidden, num_layers=1, batch_first=True)
            self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(hidden, 32), nn.ReLU(), nn.Dropout(dropout),
                                      nn.Linear(32, 32), nn.ReLU(), nn.Dropout(dropout), nn.Linear(32, 2))

        def forward(self, x, pad):
            # the hidden state after each run's last token: a unidirectional LSTM's output at position
            # length - 1 reads only the tokens before it, so the padding after it changes nothing (the
            # unpacked batch runs oneDNN's fused LSTM, ~9x faster on CPU than a PackedSequence)
            last = (~pad).sum(dim=1).clamp(min=1) - 1
            out, _ = self.lstm(x)
            return self.head(out[torch.arange(len(x)), last])

    return LSTMNet()


def _transformer_module(torch, n_in: int, d: int, heads: int, ff: int, dropout: float, max_positions: int):
    nn = torch.nn

    class TransformerNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(n_in, d)
            self.pos = nn.Parameter(torch.zeros(max_positions, d).normal_(0.0, 0.02))
            self.encoder = nn.TransformerEncoderLayer(d, heads, dim_feedforward=ff, dropout=dropout, batch_first=True)
            self.score = nn.Linear(d, 1)
            self.head = nn.Sequential(nn.Linear(d, 16), nn.ReLU(), nn.Dropout(dropout), nn.Linear(16, 2))

        def forward(self, x, pad):
            h = self.embed(x) + self.pos[: x.shape[1]]
            h = self.encoder(h, src_key_padding_mask=pad)
            w = self.score(h).squeeze(-1).masked_fill(pad, float("-inf")).softmax(dim=1)
            return self.head((w.unsqueeze(-1) * h).sum(dim=1))

    return TransformerNet()
