"""A temporary workspace and a tool context on it, for the tool tests (no Django)."""

from pathlib import Path

from sessions_app.agent.paths import Workspace
from sessions_app.agent.tools import ToolContext, ToolResult, execute_tool


def tool_workspace(tmp_path: Path) -> Path:
    """The workspace root, with one sibling folder inside it."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "outside-sibling").mkdir()
    return root


def tool_context(root: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(Workspace(str(root)), str(tmp_path / "artifacts"), bash_timeout=30)


def run(ctx: ToolContext, name: str, args: dict | str) -> ToolResult:
    """One call through the registry, as the agent loop makes it."""
    return execute_tool(name, args if isinstance(args, str) else dict(args), ctx)
