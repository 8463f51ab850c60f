"""The errors ``TFKerasTrial`` code is told of, with Determined's names."""

from __future__ import annotations

from typing import Any


class InvalidExperimentException(Exception):
    """The trial's code uses the API in a way that cannot work (Determined's name)."""


class InvalidDataTypeException(InvalidExperimentException):
    """A data loader returned something ``TFKerasTrial`` cannot train on."""

    def __init__(self, given: type[Any], message: str) -> None:
        super().__init__(f"{given.__name__} is no input data: {message}")
