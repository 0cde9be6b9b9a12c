"""The warning class bayeval raises for statistical caveats (filter it by this name)."""

__all__ = ["BayevalWarning"]


class BayevalWarning(UserWarning):
    """Warning raised by bayeval itself (a statistical caveat the user should read).

    Examples
    --------
    >>> import warnings
    >>> from bayeval.errors import BayevalWarning
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("one trial per task", BayevalWarning)
    >>> caught[0].category.__name__
    'BayevalWarning'
    """
