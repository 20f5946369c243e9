"""The pending badge: one line on every screen saying that decisions wait and which key answers them.

A request the person set aside ("later"), or one that arrived while a screen other than Run was shown,
would otherwise wait unseen. The badge is hidden (``display: none``) while nothing waits or while a
decision view is open; the app tells it the count through its ``decisions_waiting`` reactive.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from rich.text import Text
from textual import events
from textual.reactive import reactive
from textual.widgets import Static

APPROVALS_KEY = "p"
"""The app's key that shows the waiting decisions again (the app binds it; the badge names it)."""


@runtime_checkable
class DecisionsWaiting(Protocol):
    """An app that counts the inbox's requests waiting with no decision view open."""

    decisions_waiting: int


def waiting_in(app: object) -> int:
    """How many decisions wait unseen in ``app`` (0 for an app without an inbox, such as a replay)."""
    return app.decisions_waiting if isinstance(app, DecisionsWaiting) else 0


def badge_text(count: int) -> Text:
    """``⏸ 2 decisions waiting — p to answer`` (plain text: nothing in it comes from a request)."""
    noun = "decision" if count == 1 else "decisions"
    return Text(f"⏸ {count} {noun} waiting — {APPROVALS_KEY} to answer", no_wrap=True, overflow="ellipsis")


class PendingBadge(Static):
    """Shown while decisions wait and no decision view is open; a click does what the key does.

    A screen yields it last before its footer: it takes the row above the footer while shown, and
    nothing while hidden.
    """

    DEFAULT_CSS = """
    PendingBadge {
        display: none;
        height: 1;
        width: 1fr;
        padding: 0 1;
        background: $warning 30%;
        color: $text;
        text-style: bold;
        &.-waiting { display: block; }
        &:hover { background: $warning 50%; }
    }
    """

    count: reactive[int] = reactive(0, init=False)

    def on_mount(self) -> None:
        if isinstance(self.app, DecisionsWaiting):
            self.watch(self.app, "decisions_waiting", self._set_count)

    def _set_count(self, count: int) -> None:
        self.count = count

    def watch_count(self, count: int) -> None:
        self.set_class(count > 0, "-waiting")
        if count:
            self.update(badge_text(count))

    async def on_click(self, event: events.Click) -> None:
        """Open the waiting decisions, as the key does (and only when the key would)."""
        event.stop()
        await self.app.run_action("approvals")
