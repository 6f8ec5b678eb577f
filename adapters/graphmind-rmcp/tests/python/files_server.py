"""An MCP server written with the Python `mcp` SDK (stdio), for the mcp-proxy tests: `add`
(read-only), `delete_file` (destructive), `fail` (raises, so the SDK answers isError)."""

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("py-files")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def add(x: int, y: int) -> str:
    """Adds two numbers."""
    return str(x + y)


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
def delete_file(path: str) -> str:
    """Deletes nothing; says what it would delete."""
    return f"deleted {path}"


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("disk full")


if __name__ == "__main__":
    server.run("stdio")
