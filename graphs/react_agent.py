"""The default agent graph, as shipped in the package (``ditto_tui/agent/react_agent.py``).

``ditto-tui`` runs the packaged graph in any folder. Copy that file here and change it to give a trusted
workspace an agent of its own: a trusted workspace's ``graphs/react_agent.py`` replaces the default.
"""

from ditto_tui.agent.react_agent import program

__all__ = ["program"]
