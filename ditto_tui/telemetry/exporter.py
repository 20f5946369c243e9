"""The exporter process: reads a run process's records on stdin, makes the spans, exports them over OTLP.

Started by :class:`ditto_tui.telemetry.feed.RunTracer` (``python -m ditto_tui.telemetry.exporter``): the
first line on stdin is the settings as JSON (the endpoint, the headers with their secrets: never on the
command line), then length-prefixed records (``marshal``). A ``flush`` record is answered on stdout with
one JSON line of counts once the spans so far are exported (or its timeout passed). At the end of stdin
(the run process left) what is held is exported within ``otel.timeoutSeconds`` and the process ends.
Its log records go to the ``log`` file the settings name; a ctrl+c in the terminal is not for it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import marshal
import os
import signal
import struct
import sys
import threading
from pathlib import Path
from typing import Any

from ditto_tui.telemetry import TraceSettings
from ditto_tui.telemetry.spans import SCOPE, SpanBuilder, exporting_provider

logger = logging.getLogger(__name__)

FRAME = struct.Struct("<I")


def _settings(line: bytes) -> tuple[TraceSettings, Path]:
    fields: dict[str, Any] = json.loads(line)
    log = Path(fields.pop("log"))
    fields["headers"] = tuple((str(name), str(value)) for name, value in fields.get("headers", ()))
    fields["secrets"] = tuple(str(value) for value in fields.get("secrets", ()))
    return TraceSettings(**fields), log


def _records(stream: Any) -> Any:
    """The records on ``stream``: frames of a length and a ``marshal``-ed list of records each."""
    while True:
        head = stream.read(FRAME.size)
        if len(head) < FRAME.size:
            return
        (size,) = FRAME.unpack(head)
        data = stream.read(size)
        if len(data) < size:
            return
        batch = marshal.loads(data)
        if isinstance(batch, list):
            yield from batch


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.nice(10)  # background work: a run's process comes first for the cores
    stdin, stdout = sys.stdin.buffer, sys.stdout
    settings, log = _settings(stdin.readline())
    provider = exporting_provider(settings, log)
    counts = provider.counting  # type: ignore[attr-defined]
    builder = SpanBuilder(provider.get_tracer(SCOPE), settings, provider.id_generator)  # type: ignore[arg-type]
    for record in _records(stdin):
        if isinstance(record, dict) and record.get("kind") == "flush":
            provider.force_flush(int(float(record.get("timeout", 5.0)) * 1000))
            answer = {"token": record.get("token"), "exported": counts.exported, "failed": counts.failed}
            stdout.write(json.dumps(answer) + "\n")
            stdout.flush()
            continue
        try:
            builder.handle(record)
        except Exception:  # one bad record must not lose the others
            logger.exception("a record of kind %r was not traced", record.get("kind"))
    leaving = threading.Thread(target=provider.shutdown, daemon=True)
    leaving.start()
    leaving.join(settings.timeout_seconds + 1.0)
    logging.shutdown()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
