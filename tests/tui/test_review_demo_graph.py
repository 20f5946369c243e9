"""graphs/review_result.py: the demo server's saved page waits for review, its injection marked; a
redaction of the injected lines is what the delivery gets."""

from __future__ import annotations

import json
from pathlib import Path

from ditto_tui.config import load_runtime_config_file
from ditto_tui.program import load_program
from ditto_tui.supervise import ReviewDecision
from ditto_tui.tui import DittoApp, RunSpec
from ditto_tui.tui.screens.review import ReviewModal
from tests.tui.run_fixtures import ROOT, SIZE, outputs, wait_until

GRAPH = ROOT / "graphs" / "review_result.py"


def _app(root: Path) -> DittoApp:
    config = load_runtime_config_file(ROOT / "ditto.yaml", {}, workspace=root)
    program = load_program(GRAPH, config, root)
    return DittoApp(RunSpec(config=config, workspace=root, program=program))


async def test_the_saved_page_is_held_with_its_injection_marked_and_goes_on_redacted(tmp_path: Path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ReviewModal), timeout=30)
        view = app.screen
        assert isinstance(view, ReviewModal)
        assert {"override", "exfiltration", "secrecy"} <= {span.label for span in view.request.spans}
        assert view.request.rule is None  # the graph asked for review of demo:read_note
        wire = view.request.result.to_wire()
        kept = view.request.text[: view.request.text.index("<!--")]
        redaction = {key: value for key, value in wire.items() if key != "structuredContent"}
        decision = ReviewDecision(action="redact", result={**redaction, "content": kept})
        assert app.bridge.approver.resolve(view.request.request_id, decision)
        result = await outputs(pilot)
    observed = json.dumps(result["observe"].model_dump(mode="json"))
    assert "release checklist" in observed and "id_rsa" not in observed
    assert "Ignore all previous instructions" not in observed
