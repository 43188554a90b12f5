"""The package's JSON data files: one registry, one cached loader.

Facts the package acts on (version matrices, API tables, error codes, tolerances, chip profiles) are data, not code.
Every file is declared in :data:`DATA_FILES` with the package it ships in, its path there, and the records in it
that must name where they come from (the project's convention: a ``source`` per entry). :func:`load` reads a
declared file once per process through :mod:`importlib.resources` (so it works from a wheel or a zip) and checks it
is a JSON object; ``tests/test_data_files.py`` checks every declared file's shape and sources, and that no JSON file
in the package is left undeclared.

What :func:`load` returns is shared by every caller (it is cached): read it, never change it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

#: A JSON object as :func:`json.loads` returns it.
JSONObject = dict[str, Any]

__all__ = ["DATA_FILES", "DataError", "DataFile", "JSONObject", "load", "records"]


class DataError(ValueError):
    """A data file is missing, not JSON, or not shaped as declared (the message names the file)."""


@dataclass(frozen=True)
class DataFile:
    """A JSON file shipped in the package.

    ``records`` are dotted paths to the entries that must carry a non-empty ``source``: ``"pairs.*"`` is every item
    of the ``pairs`` list (or every value of the ``pairs`` object), ``"op_level.dtypes.*"`` every value under
    ``op_level`` -> ``dtypes``. A file whose facts share one origin declares no records and has a top-level
    ``source``.
    """

    name: str
    package: str
    path: str
    records: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        """``ascend_compat/doctor/data/version_matrix.json``: how messages name the file."""
        return self.package.replace(".", "/") + "/" + self.path

    def read_text(self) -> str:
        where = resources.files(self.package)
        for part in self.path.split("/"):  # one part at a time: namespace packages take one per call (3.11)
            where = where.joinpath(part)
        return where.read_text(encoding="utf-8")


_FILES = (
    DataFile("cuda_api", "ascend_compat.cuda_shim", "cuda_api.json"),
    DataFile("dtype_support", "ascend_compat.cuda_shim", "dtype_support.json", ("backends.*.*",)),
    DataFile("cann_errors", "ascend_compat.doctor", "data/cann_errors.json", ("codes.*",)),
    DataFile("version_matrix", "ascend_compat.doctor", "data/version_matrix.json", ("pairs.*", "torch_python.*")),
    DataFile("quantization", "ascend_compat.ecosystem", "data/quantization.json",
             ("platform_methods.*", "methods.*", "ascend_flag")),
    DataFile("vllm_ascend", "ascend_compat.ecosystem", "data/vllm_ascend.json",
             ("releases.*", "attention.*", "platform_plugin", "install")),
    DataFile("builtin_ops", "ascend_compat.kernel_helper", "data/builtin_ops.json", ("operators.*",)),
    DataFile("computations", "ascend_compat.kernel_helper", "data/computations.json", ("computations.*",)),
    DataFile("dtypes", "ascend_compat.kernel_helper", "data/dtypes.json", ("dtypes.*",)),
    DataFile("cuda_cxx_apis", "ascend_compat.migrate", "data/cuda_cxx_apis.json", ("entries.*",)),
    DataFile("dependencies", "ascend_compat.migrate", "data/dependencies.json", ("packages.*",)),
    DataFile("effort", "ascend_compat.migrate", "data/effort.json", ("units.*", "operators.*", "ports.*")),
    DataFile("report_plans", "ascend_compat.migrate", "data/report_plans.json", ("sections.*",)),
    DataFile("torch_npu_api_support", "ascend_compat.migrate", "data/torch_npu_api_support.json",
             ("advice.*", "affinity.*", "parameter_advice.*.*")),
    DataFile("triton_ascend", "ascend_compat.migrate", "data/triton_ascend.json", ("rules.*",)),
    DataFile("chips", "ascend_compat.simulate", "chips.json", ("chips.*",)),
    DataFile("superopt_targets", "ascend_compat.superopt", "data/targets.json", ("targets.*", "tolerances.*")),
    DataFile("tolerances", "ascend_compat.verify", "data/tolerances.json",
             ("op_level.dtypes.*", "op_level.overrides.*", "model_level.dtypes.*")),
)

#: Every data file of the package, by name.
DATA_FILES: dict[str, DataFile] = {f.name: f for f in _FILES}


@functools.cache
def load(name: str) -> JSONObject:
    """The parsed contents of the data file ``name`` (a key of :data:`DATA_FILES`), read once per process."""
    spec = DATA_FILES.get(name)
    if spec is None:
        raise KeyError(f"no data file named {name!r}; known: {', '.join(sorted(DATA_FILES))}")
    try:
        text = spec.read_text()
    except OSError as exc:
        raise DataError(f"{spec.where}: cannot be read ({exc}); the package is incomplete") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise DataError(f"{spec.where}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise DataError(f"{spec.where}: the top level must be a JSON object, not {type(data).__name__}")
    return data


def records(data: Any, path: str) -> Iterator[tuple[str, Any]]:
    """(location, value) for each value ``path`` (see :class:`DataFile`) names in ``data``; a missing key is none."""
    items: list[tuple[str, Any]] = [("", data)]
    for part in path.split("."):
        step: list[tuple[str, Any]] = []
        for where, value in items:
            if part == "*" and isinstance(value, dict):
                step += [(f"{where}.{k}", v) for k, v in value.items()]
            elif part == "*" and isinstance(value, list):
                step += [(f"{where}[{i}]", v) for i, v in enumerate(value)]
            elif isinstance(value, dict) and part in value:
                step.append((f"{where}.{part}", value[part]))
        items = step
    yield from ((where.lstrip("."), value) for where, value in items)
