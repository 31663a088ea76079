"""Network builders registered per model family (bench/models/families.py): each framework API's registry (PyTorch,
Keras, Gluon) maps a family to the function that builds its catalogue models. A model whose family has no builder in
a framework is a run that framework cannot do: skipped, saying so, never an error."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import UnsupportedError
from ..models.catalogue import ModelSpec, get_model
from ..registry import Registry


class FamilyBuilders(Registry[Callable]):
    """Family name -> builder, for one framework API (`api`, as a reason names it)."""

    def __init__(self, api: str) -> None:
        super().__init__(f"{api} builder of model family")
        self.api = api

    def for_model(self, name: str) -> tuple[Callable, ModelSpec]:
        """The builder of catalogue model `name`'s family and its spec; UnsupportedError where there is none."""
        spec = get_model(name)
        if spec.family not in self:
            raise UnsupportedError(f"{self.api} has no builder for the {spec.family} family ({name}); it builds "
                                   f"{', '.join(self.names())}")
        return self.get(spec.family), spec
