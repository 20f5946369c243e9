"""The agent graph that ships with ditto-tui: the default graph in any folder."""

from ditto_tui.agent.react_agent import program

__all__ = ["program"]
