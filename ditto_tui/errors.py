"""The error hierarchy: one base class, one subclass per domain, each with a short title for the UI."""

from __future__ import annotations


class DittoError(Exception):
    """Base of every error ditto-tui raises on purpose.

    ``code`` is a stable machine-readable identifier (``^[A-Za-z0-9_.-]{1,64}$``); ``title`` is a short
    human heading the UI shows above the message.
    """

    title = "Error"
    code = "DITTO_ERROR"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class ValidationError(DittoError, ValueError):
    """Input that breaks a contract: a bad call, argument, result, receipt or configuration."""

    title = "Invalid input"
    code = "VALIDATION_ERROR"


class ConfigError(ValidationError):
    """A configuration file with an unknown key, a wrong type or a missing variable."""

    title = "Invalid configuration"
    code = "CONFIG_ERROR"


class PathError(ValidationError):
    """A workspace path refused by the path rules (``code`` names the rule, e.g. ``path_traversal``)."""

    title = "Path refused"
    code = "path_invalid"


class PermissionDeniedError(DittoError):
    """The sandbox does not grant what an action needs."""

    title = "Permission denied"
    code = "PERMISSION_DENIED"


class UnknownNodeError(DittoError, LookupError):
    """No registered worker exposes the requested node type."""

    title = "Unknown node"
    code = "UNKNOWN_NODE"


class UnknownToolError(ValidationError, LookupError):
    """A call names a tool that is not registered."""

    title = "Unknown tool"
    code = "UNKNOWN_TOOL"


class GraphBuildError(ValidationError):
    """A graph definition that cannot run: duplicate node id, unknown dependency, bad node type."""

    title = "Invalid graph"
    code = "GRAPH_INVALID"


class GraphLoadError(ValidationError):
    """A graph file that raised while it was imported or while its ``program()`` built the plan.

    ``details`` holds the traceback, for a log: the message is one line.
    """

    title = "Graph failed"
    code = "GRAPH_LOAD_ERROR"

    def __init__(self, message: str, *, details: str) -> None:
        super().__init__(message)
        self.details = details


class GraphExecutionError(DittoError):
    """A node raised during a run; ``node_id`` names it and ``__cause__`` holds the original error."""

    title = "Run failed"
    code = "GRAPH_EXECUTION_FAILED"

    def __init__(self, message: str, *, node_id: str) -> None:
        super().__init__(message)
        self.node_id = node_id


class LoopLimitError(DittoError):
    """A loop needed more iterations than its ``max_iterations``."""

    title = "Loop limit reached"
    code = "LOOP_LIMIT"


class RuntimeClosedError(DittoError):
    """The runtime was closed; it takes no new calls."""

    title = "Runtime closed"
    code = "RUNTIME_CLOSED"


class SandboxError(DittoError):
    """The command executor could not start, finish or bound a process."""

    title = "Sandbox error"
    code = "SANDBOX_ERROR"


class CommandTimeoutError(SandboxError):
    """A command ran past its deadline and was killed."""

    title = "Command timed out"
    code = "COMMAND_TIMEOUT"


class InvalidResultError(ValidationError):
    """A tool, MCP client or output sink returned something that breaks the result contract."""

    title = "Invalid result"
    code = "INVALID_RESULT"


class ToolValidationError(ValidationError):
    """A tool's own ``validate`` refused the arguments."""

    title = "Invalid arguments"
    code = "INVALID_ARGUMENTS"


class ApprovalError(DittoError):
    """An approval that does not bind to the call about to execute (wrong call, digest or tool)."""

    title = "Approval mismatch"
    code = "APPROVAL_MISMATCH"


class McpError(DittoError):
    """An MCP discovery or invocation that failed as a whole (repeated cursor, limits, bad schema)."""

    title = "MCP error"
    code = "MCP_ERROR"


class RunAbortedError(DittoError):
    """A person aborted the run at a breakpoint; ``node_id`` names the node it was paused before."""

    title = "Run aborted"
    code = "RUN_ABORTED"

    def __init__(self, message: str, *, node_id: str | None = None) -> None:
        super().__init__(message)
        self.node_id = node_id
