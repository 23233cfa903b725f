"""The descriptions of the parameters both estimators share, written once.

An estimator's docstring names shared parameters by a line holding only ``{name}`` (or several
names, ``{name other}``) where their entries belong; :func:`document_shared_parameters`, a class
decorator, replaces that line by the entries, each default read from the constructor's signature (so
it cannot go stale).
"""

from __future__ import annotations

import inspect
import re
import textwrap

__all__ = ["SHARED_PARAMETER_DOCS", "document_shared_parameters"]

#: The parameters both estimators share, in numpydoc form without their defaults (which
#: :func:`document_shared_parameters` reads from each constructor's signature).
_SHARED = """
backbone : {"aaren", "transformer"}
    Sequence mixer of the encoder; ``"transformer"`` is the KV-cached causal Transformer baseline
    (streaming then costs O(history) per step and its state grows).
d_model : int
    Width of the encoder's token vectors, 1 to 4096.
n_heads : int
    Attention heads per layer, 1 to 256 (must divide ``d_model``).
n_layers : int
    Encoder layers, 1 to 64.
d_ff : int
    Hidden width of the feed-forward layers, 1 to 16384.
optimizer : {"adam", "adamw", "sgd", "rmsprop"} or torch optimizer class
    Optimizer of the skorch training loop.
weight_decay : float
    Weight decay of the optimizer.
lr_schedule : {"cosine", "exponential", None}
    How the learning rate changes after every epoch: ``"cosine"`` anneals it to 0 at ``max_epochs``,
    ``"exponential"`` multiplies it by ``lr_decay``, ``None`` keeps it constant.
lr_decay : float
    Factor of the ``"exponential"`` schedule, in (0, 1] (``1.0`` keeps the rate constant); unused by
    the other schedules.
patience : int or None
    Epochs without improvement of the validation loss before training stops and the best epoch's
    weights return; needs a validation hold-out. ``None``: every one of ``max_epochs`` runs.
device : str, torch.device or accelerate.Accelerator
    ``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"``, ...; an ``Accelerator`` trains
    data-parallel across the processes ``accelerate launch`` started (``batch_size`` per process, the
    ``distributed`` extra; saved as ``"auto"``). See the user guide's "Scaling out".
verbose : int
    ``1``: one progress bar for the whole fit on a terminal or in a notebook, a line per stage (each
    network, the decisions) where standard error is a file or a pipe; ``2``: every stage's line and
    skorch's epoch table of every network; ``0`` is silent. Decisions worth a warning are logged
    whatever the setting.
callbacks : list of skorch callbacks or (name, callback) pairs, optional
    Extra skorch callbacks (cloned at ``fit``).
num_threads : int or None, default=1
    torch intra-op threads while fitting, predicting and streaming (restored afterwards); ``None``
    keeps torch's setting (every core). One thread, scikit-learn's convention, suits these small
    networks and busy machines; more help large networks on idle cores.
"""


def _parse(text: str) -> dict[str, tuple[str, str]]:
    entries: dict[str, tuple[str, str]] = {}
    for block in re.split(r"\n(?=\S)", text.strip()):
        head, _, body = block.partition("\n")
        name, _, kind = head.partition(" : ")
        entries[name] = (kind, " ".join(line.strip() for line in body.splitlines()))
    return entries


#: ``name: (type, description)`` of the parameters both estimators share.
SHARED_PARAMETER_DOCS: dict[str, tuple[str, str]] = _parse(_SHARED)

_MARKER = re.compile(r"^( *)\{([\w ]+)\}$", re.MULTILINE)


def _default(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def document_shared_parameters(cls: type) -> type:
    """Replace every ``{name}`` line of ``cls``'s docstring by the shared parameter's entry."""
    defaults = inspect.signature(cls.__init__).parameters

    def entry(indent: str, name: str) -> str:
        kind, text = SHARED_PARAMETER_DOCS[name]
        default = defaults[name].default
        head = f"{indent}{name} : {kind}" + ("" if "optional" in kind else f", default={_default(default)}")
        inner = indent + "    "
        body = textwrap.fill(text, width=110, initial_indent=inner, subsequent_indent=inner)
        return f"{head}\n{body}"

    def entries(match: re.Match[str]) -> str:
        return "\n".join(entry(match.group(1), name) for name in match.group(2).split())

    cls.__doc__ = _MARKER.sub(entries, cls.__doc__ or "")
    return cls
