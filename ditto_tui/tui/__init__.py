"""The Textual application over the ditto-tui runtime: ``DittoApp`` and the ``RunSpec`` it opens."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ditto_tui.tui.app import DittoApp
    from ditto_tui.tui.bridge import RunSpec

__all__ = ["DittoApp", "RunSpec"]


def __getattr__(name: str) -> Any:
    """Import the application only when it is asked for, so ``ditto_tui.tui.text`` stays light."""
    if name == "DittoApp":
        from ditto_tui.tui.app import DittoApp

        return DittoApp
    if name == "RunSpec":
        from ditto_tui.tui.bridge import RunSpec

        return RunSpec
    raise AttributeError(name)
