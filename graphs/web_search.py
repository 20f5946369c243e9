"""Search the web with Brave Search and deliver the results: TOOL (web_search) → OBSERVE → OUTPUT.

``web_search`` asks for approval before each search (a query leaves the machine). The key comes from the
environment, never from the graph. To run it:

1. Get a Brave Search API key (https://brave.com/search/api/) and ``export BRAVE_API_KEY=...``.
2. In ``ditto.yaml`` set the key, grant the tool and the API's origin::

       interaction:
         webSearch:
           apiKey: ${BRAVE_API_KEY}
       sandbox:
         tools: [..., web_search]
         network: [https://api.search.brave.com]

3. ``ditto-tui run graphs/web_search.py`` (add ``--headless --approve allow`` to run it unattended).

Without a key the graph does not start and says what to set.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ditto_tui.config import RuntimeConfig
from ditto_tui.errors import ConfigError
from ditto_tui.interaction import create_brave_web_search_provider, create_web_search_tool
from ditto_tui.program import Program
from ditto_tui.runtime import graph

QUERY = "Model Context Protocol tool approval"
MISSING_KEY = (
    "graphs/web_search.py needs a Brave Search API key: export BRAVE_API_KEY=... and set "
    "interaction.webSearch.apiKey: ${BRAVE_API_KEY} in ditto.yaml (the graph's docstring has the steps)"
)


def _search(input: Mapping[str, Any], _deps: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "call": {"id": "search-1", "name": "web_search", "arguments": {"query": input["query"], "limit": 5}}
    }


def _deliver(input: Mapping[str, Any], deps: Mapping[str, Any]) -> dict[str, Any]:
    observation = deps["observe"]
    if observation.status == "success":
        content: Any = observation.message.content
    else:
        error = observation.error
        content = f"No results for {input['query']!r}: the search ended {observation.status}" + (
            f" ({error.code}: {error.message})" if error is not None else ""
        )
    return {"deliveryId": "web-search:1", "message": {"role": "assistant", "content": content}}


def program(config: RuntimeConfig, workspace: Path) -> Program:
    """One search for ``QUERY``; raises a configuration error naming what to set when there is no key."""
    settings = config.interaction.web_search
    if not settings.api_key:
        raise ConfigError(MISSING_KEY)
    provider = create_brave_web_search_provider(**settings.as_kwargs())
    plan = (
        graph("web-search")
        .node("search", "INTERACTION.ACT.TOOL", [], _search)
        .node("observe", "INTERACTION.OBSERVE", ["search"], lambda _i, deps: {"result": deps["search"]})
        .node("output", "INTERACTION.OUTPUT", ["observe"], _deliver)
    )
    return Program(
        name="web-search",
        description=__doc__ or "",
        plan=plan,
        initial={"query": QUERY},
        tools=(create_web_search_tool(provider=provider),),
    )
