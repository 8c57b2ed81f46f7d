"""The base of every spec model (:mod:`mcpspec.spec.models` and :mod:`mcpspec.spec.conditions`)."""

from pydantic import BaseModel, ConfigDict


class SpecModel(BaseModel):
    """Base of every model: unknown keys are errors, values are not coerced between types."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)
