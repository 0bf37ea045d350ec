"""Pure projectors: ``event -> list of Redis commands``, one module per view. No I/O.

The same functions run inline in the append, in the projector worker and in replay, so a view
rebuilt from the log is identical to the live one. The checkpoint domain's views (projector,
read call, index schema) are registered once, in `projectors.domain.CHECKPOINTS`.
"""

from __future__ import annotations

from collections.abc import Mapping

from projectors.domain import CHECKPOINTS
from streamsaver.log.domain import Projector
from streamsaver.log.keys import ViewName

__all__ = ["PROJECTORS", "Projector"]

PROJECTORS: Mapping[ViewName, Projector] = CHECKPOINTS.projectors
"""Each checkpoint view's projector, by name (`CHECKPOINTS.projectors`)."""
