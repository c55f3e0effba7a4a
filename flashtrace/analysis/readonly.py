"""The read-only ``extra`` of an immutable `Trace` (`analysis.schema`)."""

from __future__ import annotations


class ReadOnlyDict(dict):
    """A trace's ``extra``: a dict that cannot be changed in place (a `Trace` is immutable, so what is derived from
    it can be kept with it). Read it as any dict; a changed trace is a copy:
    ``trace.model_copy(update={"extra": {**trace.extra, "key": value}})``."""

    def _refuse(self, *_args, **_kwargs):
        raise TypeError("a Trace is immutable: make a changed copy, "
                        "trace.model_copy(update={'extra': {**trace.extra, KEY: VALUE}})")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = __ior__ = _refuse

    def __reduce__(self):  # pickled (Ray) and copied as a plain dict of the same items
        return ReadOnlyDict, (dict(self),)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        import copy

        return ReadOnlyDict(copy.deepcopy(dict(self), memo))


__all__ = ["ReadOnlyDict"]
