"""Reading checkpoint stores written by bayeval 0.1.0: one HDF5 (netCDF4) group per checkpoint.

Read-only: such a store is read for the monitors and copied into a database store by
:func:`bayeval.monitor.migrate`. Groups are ordered by the integer in their name
(``checkpoint_000999`` before ``checkpoint_1000000``), and a group without a label, which a
failed append of that version left behind, is passed over instead of making every other
checkpoint unreachable.
"""

from __future__ import annotations

import json
import re

import h5netcdf
import xarray as xr

from bayeval.data import EvalData

_GROUP = re.compile(r"checkpoint_(\d+)")


class HDF5Store:
    """The groups of an HDF5 checkpoint store, read-only."""

    def __init__(self, path: str):
        self.path = self.where = path

    def groups(self) -> list[tuple[str, object, str | None]]:
        """``(group, label or None, arrived_at or None)`` of every checkpoint group, in order."""
        out = []
        with h5netcdf.File(self.path, "r") as f:
            names = [n for n in f.groups if _GROUP.fullmatch(n)]
            for name in sorted(names, key=lambda n: int(n.split("_")[1])):
                attrs = f.groups[name].attrs
                label = json.loads(attrs["checkpoint"]) if "checkpoint" in attrs else None
                arrived = str(attrs["arrived_at"]) if "arrived_at" in attrs else None
                out.append((name, label, arrived))
        return out

    def labels(self) -> list[tuple[str, object]]:
        """``(group, label)`` of the labelled groups, in arrival order."""
        return [(g, label) for g, label, _ in self.groups() if label is not None]

    def load(self, group: str) -> EvalData:
        """One group's counts."""
        try:
            with xr.open_dataset(self.path, group=group, engine="h5netcdf") as ds:
                ds = ds.load()
            ds.attrs = {k: v for k, v in ds.attrs.items() if k not in ("checkpoint", "arrived_at")}
            return EvalData(ds)
        except (ValueError, KeyError, OSError) as err:
            raise ValueError(
                f"group {group!r} of {self.path} cannot be read back ({err}); an append of "
                "bayeval 0.1.0 probably failed halfway there"
            ) from err
