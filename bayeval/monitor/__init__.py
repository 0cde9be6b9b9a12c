"""Continuous evaluation: a store of checkpoint counts and anytime-valid confidence sequences.

Training jobs append each checkpoint's counts to a :class:`CheckpointStore` (SQLite, or
PostgreSQL where many machines write); the monitors read it after every checkpoint with
confidence sequences that cover their target at all times at once, so a gate checked after
every checkpoint keeps its error rate. Where the most tasks a run will have is fixed in
advance, :func:`monitor_planned` tests at the same checkpoints with a group sequential
(alpha-spending) boundary, which keeps nearly all the power of one test at the end.
"""

from bayeval.monitor.planned import monitor_planned, spending_bounds
from bayeval.monitor.sequential import (
    betting_capital,
    betting_cs,
    log_mixture_martingale,
    monitor_paired,
    monitor_rate,
    rate_cs,
)
from bayeval.monitor.store import CheckpointStore, migrate

__all__ = [
    "CheckpointStore",
    "betting_capital",
    "betting_cs",
    "log_mixture_martingale",
    "migrate",
    "monitor_paired",
    "monitor_planned",
    "monitor_rate",
    "rate_cs",
    "spending_bounds",
]
