"""The limits of the protected re-run, apart from the runner so that the command line reads its defaults without
importing it (``scitaste --help`` stays fast)."""

from __future__ import annotations

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
        if not (self.wall_s > 0 and self.memory_mb > 0 and self.output_mb > 0 and self.disk_mb > 0):
            raise InvalidInput("every re-run limit must be > 0")


#: The limits a re-run gets unless the command line says otherwise.
DEFAULT_LIMITS = Limits()
