"""When a listing ends: the rule that the listings of all three clients share, and the offset paging of arXiv
queries and ADS bigqueries.

A listing ends once the records wanted have come, once the count the server announced (OpenAlex ``meta.count``,
ADS ``numFound``, arXiv ``totalResults``) has come, or when the server offers no further page: no cursor, a
cursor that does not move, an empty page, or (offset paging) the same page again. It never ends because a page
held fewer records than were asked for: a server may cap its page size below the request, and stopping there
would silently drop the rest. An empty page always ends it, so that a server offering a cursor with nothing
behind it cannot hold a listing forever.
A listing that ends before the announced count has a *shortfall*, which the transport logs and counts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from scitaste_hf.sources.transport import Call

T = TypeVar("T")


class Tally:
    """Records seen against what is wanted and what the server announced.

    :param limit: most records wanted, or None for all.
    """

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.seen = 0
        #: ``(records seen, count announced)`` once the listing has ended short of the count; else None.
        self.shortfall: tuple[int, int] | None = None

    def take(self, records: Sequence[T]) -> list[T]:
        """The records of a page that ``limit`` still allows, counted as seen.

        :param records: the page's records.
        """
        kept = list(records if self.limit is None else records[:max(0, self.limit - self.seen)])
        self.seen += len(kept)
        return kept

    def ends(self, announced: int | None, more: bool) -> bool:
        """Whether the listing ends with the page just taken (and its shortfall, if it ends short).

        :param announced: the total the server announced (None: it said none).
        :param more: whether the server offers a further page (a new cursor after a page that was not empty).
        """
        if (self.limit is not None and self.seen >= self.limit) or (announced is not None and self.seen >= announced):
            return True
        if not more and announced is not None:
            self.shortfall = (self.seen, announced)
        return not more


class OffsetListing(Generic[T]):
    """``start``/``size`` paging until the announced total (arXiv ``start``/``max_results``, ADS ``start``/``rows``).

    :param call: the request for the page of ``size`` records from ``start``.
    :param parse: the records of an answer and the total it announced.
    :param page_size: records asked for per page.
    :param limit: most records wanted, or None.
    """

    def __init__(self, call: Callable[[int, int], Call], parse: Callable[[Any], tuple[Sequence[T], int | None]],
                 page_size: int, limit: int | None = None) -> None:
        self._call, self._parse, self._page_size = call, parse, page_size
        self._tally = Tally(limit)
        self._start = 0
        self._done = False
        self._previous: list[T] = []

    def next_call(self) -> Call | None:
        """The request for the next page (no larger than ``limit`` still allows), or None after the last."""
        if self._done:
            return None
        limit, seen = self._tally.limit, self._tally.seen
        return self._call(self._start, self._page_size if limit is None else max(1, min(self._page_size,
                                                                                       limit - seen)))

    def feed(self, data: Any) -> list[T]:
        """The records of a page, at most as many as ``limit`` still allows.

        :param data: the page's parsed body.
        """
        records, total = self._parse(data)
        # a server that ignores `start` sends the same page again and again: that page brings nothing new
        records, self._previous = ([] if records and records == self._previous else records), list(records)
        self._start += len(records)
        kept = self._tally.take(records)
        self._done = self._tally.ends(total, more=bool(records))
        return kept

    def shortfall(self) -> tuple[int, int] | None:
        """``(records seen, count announced)`` if the listing has just ended short of the count, else None."""
        return self._tally.shortfall
