"""Start ``client.py`` for each conformance scenario in a fraction of a second: a fork server.

The suite starts the client once per scenario, 26 times in all. A new Python process spends about two
seconds of CPU importing ditto-tui, httpx and the MCP SDK before the client does anything; on two cores
that was most of the conformance tests' time. Here one process (``serve``) imports ``client.py`` once and
forks a child for each scenario: the child is a separate process, with the scenario's arguments, working
directory, environment and standard streams, and runs ``client.main`` exactly as ``python client.py URL``
would. What the suite starts is the stub (``stub``, run with ``python -S``: no site, no imports beyond
the standard library's core), which hands its streams to the fork server over a Unix socket, forwards
SIGTERM, SIGINT and SIGHUP to the child, and exits with the child's exit code.

    python forkserver.py serve SOCKET CLIENT.py     # prints "ready" once it accepts stubs
    python -S forkserver.py stub SOCKET ARG...      # what the suite runs, with the server's URL appended
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from typing import Any


def stub(path: str, argv: list[str]) -> int:
    """Run the client in a child of the fork server with this process's streams; its exit code."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    socket.send_fds(connection, [b"F"], [0, 1, 2])
    request = json.dumps({"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    connection.sendall(b"%d\n" % len(request) + request)
    replies = connection.makefile("rb")
    pid = int(replies.readline() or b"0")
    if pid <= 0:
        print("forkserver: the fork server did not start the client", file=sys.stderr)
        return 1

    def forward(signum: int, _frame: Any) -> None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    line = replies.readline()
    if not line:  # the child died without saying how: killed by a signal
        print("forkserver: the client ended without an exit code", file=sys.stderr)
        return 1
    return int(line)


def _child(connection: socket.socket, fds: list[int], request: dict[str, Any], main: Any) -> None:
    """(In the forked child) become the client process of ``request`` and run it; never returns."""
    code = 1
    try:
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - the process's own stream
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = ["client.py", *request["argv"]]
        connection.sendall(b"%d\n" % os.getpid())
        main(request["argv"])
        code = 0
    except SystemExit as exit:  # as Python ends on it: None is 0, a number the code, else said and 1
        if exit.code is None or isinstance(exit.code, int):
            code = exit.code or 0
        else:
            print(exit.code, file=sys.stderr)
            code = 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            connection.sendall(b"%d\n" % code)
        finally:
            os._exit(code)


def serve(path: str, client: str) -> None:
    """Import ``client`` once, then fork a child running its ``main`` for each stub that connects."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("conformance_client", client)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped as they end
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(32)
    print("ready", flush=True)
    while True:
        connection, _ = listener.accept()
        try:
            _, fds, _, _ = socket.recv_fds(connection, 1, 3)
            replies = connection.makefile("rb")
            size = int(replies.readline())
            request = json.loads(replies.read(size))
        except (OSError, ValueError):
            connection.close()
            continue
        if os.fork() == 0:
            listener.close()
            _child(connection, fds, request, module.main)
        for fd in fds:
            os.close(fd)
        connection.close()


if __name__ == "__main__":
    if sys.argv[1] == "stub":
        sys.exit(stub(sys.argv[2], sys.argv[3:]))
    serve(sys.argv[2], sys.argv[3])
