"""The one error of the catalog: a file, a field of it and what is wrong, as instructors read it."""

from __future__ import annotations


class CatalogError(ValueError):
    def __init__(self, path: str, field: str, problem: str) -> None:
        super().__init__(f"{path}: {field}: {problem}")
        self.path, self.field, self.problem = path, field, problem
