"""The keys line at the bottom of every screen, rebuilt only when the keys it shows change.

Textual's :class:`~textual.widgets.Footer` rebuilds all its key widgets each time a screen's bindings are
refreshed, and they are refreshed whenever focus moves, a screen opens or closes, or a run's events
arrive (a key's enabled state may depend on them). Each rebuild costs tens of milliseconds of styling;
at one per frame under a flood of events that is most of the frame. This footer compares what it would
show (each shown key, its label, action, state and tooltip) with what it shows and skips the rebuild
when they are the same.
"""

from __future__ import annotations

from collections.abc import Hashable

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer


class KeysFooter(Footer):
    """A :class:`~textual.widgets.Footer` that is rebuilt only when the keys it shows changed."""

    _shown: Hashable = None

    def _keys(self) -> Hashable:
        display = self.app.get_key_display
        shown = tuple(
            (key, binding.action, binding.description, display(binding), enabled, tooltip, binding.group)
            for key, (_node, binding, enabled, tooltip) in self.screen.active_bindings.items()
            if binding.show
        )
        return (shown, self.compact, self.show_command_palette)

    def compose(self) -> ComposeResult:
        if self._bindings_ready:
            self._shown = self._keys()
        yield from super().compose()

    def bindings_changed(self, screen: Screen[object]) -> None:
        shown_here = self._bindings_ready and self.is_attached and screen is self.screen
        if shown_here and self._keys() == self._shown:
            return
        super().bindings_changed(screen)


__all__ = ["KeysFooter"]
