"""A durable run is one trace, wherever its parts run: Temporal's OpenTelemetry interceptor carries the
trace from the process that started the run through the workflow to the worker's activities, so the
worker's node spans, and the approval a person gave from a third process, share the start's trace."""

from __future__ import annotations

import signal
from pathlib import Path

from tests.runs.workspace import NOTE, Workspace
from tests.telemetry.receiver import otlp_receiver


def test_a_durable_run_started_worked_and_answered_in_three_processes_is_one_trace(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    with otlp_receiver() as received:
        workspace = Workspace(root, tmp_path / "home")
        workspace.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = received.url
        try:
            run_id = workspace.cli("run", "graphs/write_note.py", "--detach").stdout.strip()
            worker = workspace.worker()
            (waiting,) = workspace.waiting(run_id=run_id)
            workspace.cli("decide", str(waiting["request_id"]), "approve")
            assert workspace.run_status(run_id) == "succeeded"
            assert (root / NOTE).exists()
            worker.send_signal(signal.SIGTERM)  # the worker leaves as a person stops it: its spans go
            assert worker.wait(timeout=30) == 0
            received.wait_for("ditto.approval")
            received.wait_for("StartWorkflow:")
        finally:
            workspace.close()
    (started,) = received.named("StartWorkflow:")
    trace = started.trace_id
    nodes = [span for span in received.spans if "ditto.node.id" in span.attributes]
    assert {"read", "write"} <= {span.attributes["ditto.node.id"] for span in nodes}
    assert {span.trace_id for span in nodes} == {trace}
    activities = {span.span_id for span in received.named("RunActivity:")}
    assert all(span.parent_id in activities for span in nodes)  # each node under its activity
    (approval,) = received.named("ditto.approval write_text")
    assert approval.trace_id == trace
    assert (approval.attributes["ditto.decided_by"], approval.attributes["ditto.via"]) == ("human", "cli")
    assert approval.resource["service.name"] == "ditto-tui"
