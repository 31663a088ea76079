"""Executing a notebook whose outputs are masked each time papermill writes it (after every cell, on autosave, at the
end), so an executed notebook never holds what a kernel printed of a credential, not even while it runs."""

from __future__ import annotations

from pathlib import Path

from ..masking import mask_text

ENGINE = "bench-masked"


def mask_outputs(nb) -> None:
    """Mask, in place, every text in the outputs of notebook `nb` (streams, errors, results, displays)."""
    for cell in nb.get("cells", []):
        if "outputs" in cell:
            cell["outputs"] = _masked(cell["outputs"])


def _masked(value):
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, list):
        return [_masked(v) for v in value]
    if isinstance(value, dict):
        return type(value)({k: _masked(v) for k, v in value.items()})
    return value


def _register() -> None:
    """papermill's nbclient engine, with every save of the notebook masked first (registered once, lazily: only a
    process that executes notebooks imports papermill)."""
    from papermill.engines import NBClientEngine, papermill_engines

    if ENGINE in papermill_engines._engines:
        return

    class MaskedEngine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, **kwargs):
            save = nb_man.save

            def masked_save(**save_kwargs):
                mask_outputs(nb_man.nb)
                return save(**save_kwargs)

            nb_man.save = masked_save  # also what papermill calls when the notebook completes
            return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)

    papermill_engines.register(ENGINE, MaskedEngine)


def execute_masked(notebook: Path | str, out: Path | str, **kwargs) -> None:
    """papermill.execute_notebook(notebook, out, **kwargs), every write of `out` masked."""
    import papermill

    _register()
    papermill.execute_notebook(str(notebook), str(out), engine_name=ENGINE, **kwargs)
