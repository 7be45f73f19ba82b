"""The limits of the protected re-run, apart from the runner so that the command line reads its defaults without
importing it (``scitaste --help`` stays fast)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from scitaste_hf.errors import InvalidInput


@dataclass(frozen=True)
class Limits:
    """What one re-run may take: wall seconds, memory (address space of each process), the size of any one file it
    writes (its standard output included) and of its folder, in MB."""

    wall_s: float = 600.0
    memory_mb: int = 4096
    output_mb: int = 16
    disk_mb: int = 1024

    def __post_init__(self) -> None:
        values = (self.wall_s, self.memory_mb, self.output_mb, self.disk_mb)
        if not all(math.isfinite(v) and v > 0 for v in values):  # inf would let a hanging command run for ever
            raise InvalidInput("every re-run limit must be a finite number > 0")


#: The limits a re-run gets unless the command line says otherwise.
DEFAULT_LIMITS = Limits()
