"""The expert ratings' local store: SQLite (WAL) in the Space's data folder, ``DATA/ratings.sqlite``, on the same
machinery as the runs' store (:class:`~scitaste_hf.leaderboard.database.Database`).

Three tables: ``ratings`` (one row per rater and paper, unique, so a rater cannot rate a paper twice),
``assignments`` (every paper shown to a rater, with its state: ``open`` while it is being rated, then ``rated``,
``skipped`` or ``released``), and ``hub_pending`` (ratings not yet copied to the Hub). The assignment of the next
paper and the storage of a rating each run in one write transaction, so that raters in several threads or
processes never take the same place twice.

The rater's id (``hf:<username>`` or ``local:<name>``) is kept here only; everything that leaves the data folder
carries its pseudonym (:meth:`RatingStore.pseudonym`), a keyed hash with a secret salt that never leaves it either.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scitaste_hf.errors import ScitasteError
from scitaste_hf.leaderboard.database import Database
from scitaste_hf.ratings.agreement import MIN_RATERS
from scitaste_hf.ratings.guide import NUMBERS

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS ratings (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    rater TEXT NOT NULL,
    bibcode TEXT NOT NULL,
    discipline TEXT NOT NULL,
    {", ".join(f"{n} REAL NOT NULL" for n in NUMBERS)},
    rated_at TEXT NOT NULL,
    UNIQUE (rater, bibcode)
);
CREATE INDEX IF NOT EXISTS ratings_paper ON ratings (discipline, bibcode);
CREATE TABLE IF NOT EXISTS assignments (
    rater TEXT NOT NULL,
    bibcode TEXT NOT NULL,
    discipline TEXT NOT NULL,
    state TEXT NOT NULL,
    assigned_at REAL NOT NULL,
    PRIMARY KEY (rater, bibcode)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS assignments_paper ON assignments (discipline, state, bibcode);
CREATE TABLE IF NOT EXISTS hub_pending (rating_id INTEGER PRIMARY KEY);
"""
#: Version of the layout above (SQLite's ``user_version``).
SCHEMA_VERSION = 1
#: Seconds a paper shown to a rater counts as taken while it is open: long enough to read an abstract and move
#: eight sliders, short enough that a rater who walked away does not hold a paper back for long.
LEASE_S = 1800.0
#: The states of an assignment.
OPEN, RATED, SKIPPED, RELEASED = "open", "rated", "skipped", "released"
#: Bytes of the pseudonyms' secret salt (``DATA/ratings.salt``).
SALT_BYTES = 32
#: Hex digits of a pseudonym's keyed hash: 64 bits, no collision among any plausible number of raters.
PSEUDONYM_HEX = 16


def _owner_only(path: Path) -> None:
    """Make the ratings' database readable by its owner only, as the salt is: it holds the raw ``hf:``/``local:``
    ids beside their scores. Created so before SQLite opens it (its ``-wal`` and ``-shm`` files take the database's
    mode); a file left 0644 by an older version is tightened, with its side files. A folder or file this user
    cannot change is left to SQLite, whose own error says what it cannot do."""
    if not path.exists():
        with contextlib.suppress(FileExistsError, PermissionError, OSError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        return
    for side in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(OSError):
            if side.stat().st_mode & 0o077:
                side.chmod(0o600)


class RatingError(ScitasteError):
    """A rating, skip or assignment that is refused; the message says why, in one line."""


@dataclass(frozen=True)
class Stored:
    """The outcome of storing a rating: its id, and whether the same rating was already stored (a replay)."""

    rating_id: int
    duplicate: bool


class RatingStore(Database):
    """Ratings, assignments and the pseudonyms' salt in ``data_dir`` (created if missing).

    Parameters
    ----------
    data_dir : path
        The Space's data folder (the runs' store lives beside it).
    lease : float
        Seconds an open paper counts as taken (:data:`LEASE_S`).
    """

    def __init__(self, data_dir: str | Path, *, lease: float = LEASE_S) -> None:
        self.root = Path(data_dir)
        self.root.mkdir(parents=True, exist_ok=True)
        self.lease = lease
        path = self.root / "ratings.sqlite"
        _owner_only(path)
        super().__init__(path, _SCHEMA, SCHEMA_VERSION)
        self._salt = self._load_salt()

    # -- pseudonyms ----------------------------------------------------------------------------------------

    def _load_salt(self) -> bytes:
        """The secret salt of ``DATA/ratings.salt``, created on first use (readable by the owner only).

        Written beside its place and linked into it, so that two processes opening a new folder at once agree on
        one salt: the link fails for the second, which reads the first's. A missing salt is created only while no
        rating is stored: a new salt beside stored ratings would give every rater a new pseudonym, unlike those
        already published.

        Raises
        ------
        ScitasteError
            When the salt is missing beside stored ratings, or is not :data:`SALT_BYTES` bytes.
        """
        path = self.root / "ratings.salt"
        if not path.exists() and self.query("SELECT 1 FROM ratings LIMIT 1"):
            raise ScitasteError(f"{path} is missing but {self.root / 'ratings.sqlite'} holds ratings; restore the salt "
                                "from a backup (a new one would give every rater a new pseudonym)")
        if not path.exists():
            tmp = self.root / f".ratings.salt.{os.getpid()}.{secrets.token_hex(4)}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(secrets.token_bytes(SALT_BYTES))
                    fh.flush()
                    os.fsync(fh.fileno())
                os.link(tmp, path)
            except FileExistsError:
                pass
            finally:
                tmp.unlink(missing_ok=True)
        salt = path.read_bytes()
        if len(salt) != SALT_BYTES:
            raise ScitasteError(f"{path} is not a salt of {SALT_BYTES} bytes; restore it from a backup (a new one "
                                "would give every rater a new pseudonym)")
        return salt

    def pseudonym(self, rater: str) -> str:
        """The rater's id as published: ``rater-`` and an HMAC-SHA256 of the id keyed by the folder's secret salt.
        Stable for this folder; without the salt, no list of usernames can be hashed to find who is who."""
        digest = hmac.new(self._salt, rater.encode("utf-8"), hashlib.sha256).hexdigest()
        return f"rater-{digest[:PSEUDONYM_HEX]}"

    # -- assignment ----------------------------------------------------------------------------------------

    def assign(self, rater: str, discipline: str, papers: Sequence[str], *, now: float | None = None,
               panel: int = MIN_RATERS) -> str | None:
        """The paper ``rater`` is to rate next among ``papers`` (the bibcodes of ``discipline``), or None when none
        is left for them.

        The paper the rater has open in this discipline is returned again (a reload shows the same paper, so no
        one can fish for papers), unless it is no longer among ``papers`` (the gold set changed): it is released
        then. Otherwise a paper the rater has never been shown is chosen by its *taken* count, its ratings plus
        the open assignments of other raters (those of the last :attr:`lease` seconds): panels are completed
        before new papers are opened. Among the papers open to this rater with fewer than ``panel`` taken (the
        agreement report's :data:`~scitaste_hf.ratings.agreement.MIN_RATERS`), the one with the most (a panel of
        two gets its third rater before a paper with one gets its second, and a new paper is opened only when none
        is part-way); only when every paper open to this rater has ``panel``, the
        one with the fewest. So no paper gets a fourth rater while one open to this rater has fewer than three,
        and a few raters complete panels of three, which the agreement report needs, instead of giving every paper
        one rating first. Ties are broken by a hash of the rater and the paper, so that raters who start together
        open different new papers. An open paper in another discipline is released first: a rater has one open
        paper at a time.
        """
        now = time.time() if now is None else now
        with self.transaction() as db:
            row = db.execute("SELECT bibcode FROM assignments WHERE rater = ? AND discipline = ? AND state = ?",
                             (rater, discipline, OPEN)).fetchone()
            if row is not None and row["bibcode"] in papers:
                db.execute("UPDATE assignments SET assigned_at = ? WHERE rater = ? AND bibcode = ?",
                           (now, rater, row["bibcode"]))
                return row["bibcode"]
            db.execute("UPDATE assignments SET state = ? WHERE rater = ? AND state = ?", (RELEASED, rater, OPEN))
            seen = {r["bibcode"] for r in db.execute("SELECT bibcode FROM assignments WHERE rater = ?", (rater,))}
            taken = dict.fromkeys(papers, 0)
            for r in db.execute("SELECT bibcode, COUNT(*) AS n FROM ratings WHERE discipline = ? GROUP BY bibcode",
                                (discipline,)):
                taken[r["bibcode"]] = taken.get(r["bibcode"], 0) + r["n"]
            for r in db.execute("SELECT bibcode, COUNT(*) AS n FROM assignments WHERE discipline = ? AND state = ?"
                                " AND assigned_at > ? AND rater != ? GROUP BY bibcode",
                                (discipline, OPEN, now - self.lease, rater)):
                taken[r["bibcode"]] = taken.get(r["bibcode"], 0) + r["n"]
            open_to_rater = [b for b in papers if b not in seen]
            if not open_to_rater:
                return None
            def order(b: str) -> tuple:
                filling = taken[b] < panel
                return (not filling, -taken[b] if filling else taken[b],
                        hashlib.sha256(f"{rater}\0{b}".encode()).digest())

            choice = min(open_to_rater, key=order)
            db.execute("INSERT INTO assignments (rater, bibcode, discipline, state, assigned_at)"
                       " VALUES (?, ?, ?, ?, ?)", (rater, choice, discipline, OPEN, now))
            return choice

    def _state(self, db, rater: str, bibcode: str) -> str | None:
        row = db.execute("SELECT state FROM assignments WHERE rater = ? AND bibcode = ?", (rater, bibcode)).fetchone()
        return None if row is None else row["state"]

    def rate(self, rater: str, bibcode: str, discipline: str, values: Sequence[float], rated_at: str, *,
             copy: bool = False) -> Stored:
        """Store ``rater``'s rating of ``bibcode`` (the eight :data:`~scitaste_hf.ratings.guide.NUMBERS`, checked by
        the caller), which must be the rater's open paper.

        The same rating sent again (a double click, a retried request) is a no-op that returns the stored one; a
        different rating of a paper the rater already rated is refused: a rating is final. With ``copy``, the
        rating is listed as waiting for its Hub copy in the same transaction.

        Raises
        ------
        RatingError
            When the paper was never shown to this rater, was skipped or released, or was rated differently.
        """
        with self.transaction() as db:
            state = self._state(db, rater, bibcode)
            if state == RATED:
                row = db.execute(f"SELECT id, {', '.join(NUMBERS)} FROM ratings WHERE rater = ? AND bibcode = ?",
                                 (rater, bibcode)).fetchone()
                if tuple(row[n] for n in NUMBERS) == tuple(values):
                    return Stored(int(row["id"]), True)
                raise RatingError(f"you already rated {bibcode}; a rating is final")
            if state is None:
                raise RatingError(f"{bibcode} is not a paper assigned to you; ask for the next paper")
            if state != OPEN:
                raise RatingError(f"you {state} {bibcode}; it cannot be rated any more")
            cur = db.execute(f"INSERT INTO ratings (rater, bibcode, discipline, {', '.join(NUMBERS)}, rated_at)"
                             f" VALUES (?, ?, ?, {', '.join('?' * len(NUMBERS))}, ?)",
                             (rater, bibcode, discipline, *values, rated_at))
            rating_id = int(cur.lastrowid)
            db.execute("UPDATE assignments SET state = ? WHERE rater = ? AND bibcode = ?", (RATED, rater, bibcode))
            if copy:
                db.execute("INSERT OR IGNORE INTO hub_pending (rating_id) VALUES (?)", (rating_id,))
            return Stored(rating_id, False)

    def skip(self, rater: str, bibcode: str) -> bool:
        """Mark the rater's open paper ``bibcode`` skipped: it is never shown to them again. True when it was
        open, False for a replay (already skipped).

        Raises
        ------
        RatingError
            When the paper is not this rater's open paper (never shown, rated or released).
        """
        with self.transaction() as db:
            state = self._state(db, rater, bibcode)
            if state == SKIPPED:
                return False
            if state != OPEN:
                raise RatingError(f"{bibcode} is not your open paper; nothing to skip")
            db.execute("UPDATE assignments SET state = ? WHERE rater = ? AND bibcode = ?", (SKIPPED, rater, bibcode))
            return True

    def release(self, rater: str) -> None:
        """The rater stops: their open paper is released at once (not rated; never shown to them again)."""
        with self.transaction() as db:
            db.execute("UPDATE assignments SET state = ? WHERE rater = ? AND state = ?", (RELEASED, rater, OPEN))

    # -- reading ---------------------------------------------------------------------------------------------

    def version(self) -> tuple[int, int]:
        """The number of ratings and the largest id: ratings are only ever added, never changed or removed, so this
        changes exactly when they do, whoever added them (assignments and skips leave it as it is)."""
        row = self.query("SELECT COUNT(*) AS n, COALESCE(MAX(id), 0) AS last FROM ratings")[0]
        return int(row["n"]), int(row["last"])

    def rated_by(self, rater: str) -> int:
        """How many papers ``rater`` has rated."""
        return int(self.query("SELECT COUNT(*) AS n FROM ratings WHERE rater = ?", (rater,))[0]["n"])

    def ratings(self) -> list[dict]:
        """Every rating, oldest first: ``id``, ``rater`` (the raw id), ``bibcode``, ``discipline``, the eight
        numbers and ``rated_at``.

        Raises
        ------
        ScitasteError
            When a stored number is not a number (SQLite keeps any value a hand-edited file puts in a REAL column),
            naming the rating and the column.
        """
        rows = [dict(row) for row in self.query("SELECT * FROM ratings ORDER BY id")]
        for row in rows:
            for n in NUMBERS:
                if isinstance(row[n], bool) or not isinstance(row[n], int | float):
                    raise ScitasteError(f"{self.root / 'ratings.sqlite'}: rating {row['id']} has {n} = "
                                        f"{str(row[n])[:40]!r}, not a number; the file was changed outside the "
                                        "Space (restore it from a backup)")
        return rows

    def copy_pending(self) -> list[int]:
        """The ids of the ratings whose Hub copy has not succeeded yet."""
        return [int(r["rating_id"]) for r in self.query("SELECT rating_id FROM hub_pending ORDER BY rating_id")]

    def copy_done(self, keys: list[int]) -> None:
        """Record that the ratings ``keys`` are on the Hub."""
        with self.transaction() as db:
            db.executemany("DELETE FROM hub_pending WHERE rating_id = ?", [(k,) for k in keys])

    def hub_files(self, keys: list[int]) -> tuple[list[tuple[str, str | bytes]], str]:
        """What the Hub copy uploads: the whole pseudonymised export (:func:`~scitaste_hf.ratings.export.
        export_files`), which holds the ratings ``keys`` and every earlier one; never the raw ids or the salt."""
        from scitaste_hf.ratings.export import export_files

        return export_files(self), f"Add {len(keys)} expert rating(s)"
