"""What a model's throughput counts: images/s for an image model, sequences/s for a token model (BERT), whose
tokens/s are its sequences/s times its sequence length. The report's numbers keep the records' `images_per_sec`
names; its labels say the unit per model."""

from __future__ import annotations

from collections.abc import Iterable

from ..models import MODELS, family_of

IMAGES_PER_SEC = "images/s"


def rate_unit(model: str) -> str:
    """'images/s' or 'sequences/s' (a model not in the catalogue reads as an image model, as every older one was)."""
    return f"{family_of(model).sample_unit}/s" if model in MODELS else IMAGES_PER_SEC


def in_unit(label: str, model: str) -> str:
    """`label` (an axis' or a column's, written in images/s) in `model`'s unit."""
    return label.replace(IMAGES_PER_SEC, rate_unit(model))


def token_models(models: Iterable[str]) -> list[str]:
    return sorted({m for m in models if m in MODELS and family_of(m).tokens})


def cell_in_unit(text: str, model: str) -> str:
    """A throughput cell of a column headed in images/s, for `model`'s row: a token model's number says its unit
    ('8.9 seq/s'); an image model's is left as it is."""
    return f"{text} {family_of(model).rate_unit}" if text and token_models([model]) else text


def rows_note(models: Iterable[str]) -> str:
    """' A token model's rows are sequences/s (their cells say seq/s).' where `models` has one, else ''."""
    return " A token model's rows are sequences/s (their cells say seq/s)." if token_models(models) else ""


def units_note(models: Iterable[str], lengths: dict[str, list[int]] | None = None) -> str:
    """' bert_base: sequences/s of 128 tokens (tokens/s = 128 x sequences/s).' for the token models among `models`
    (`lengths`: each one's sequence lengths measured), '' where every model reads images."""
    out = []
    for m in token_models(models):
        n = sorted(set((lengths or {}).get(m) or [MODELS.get(m).default_sequence_length]))
        each = "/".join(str(v) for v in n)
        out.append(f"{m}: sequences/s of {each} tokens (tokens/s = {each} x sequences/s)")
    return (" " + "; ".join(out) + ".") if out else ""
