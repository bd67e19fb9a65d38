#!/usr/bin/env python3
"""piweb_sync: send the pi sessions of this machine to a piweb server, live, and write
back what was continued there (docs/sync.md).

    python3 piweb_sync.py follow ~/.pi/agent/sessions --server URL --token T [--write-back]
    python3 piweb_sync.py push FILE... --server URL --token T

Python's standard library only; `watchfiles`, when installed, wakes the follower on
changes instead of polling. The token may also come from PIWEB_TOKEN, the server from
PIWEB_SERVER.

How it stays exact: only complete lines are sent (a line pi is still writing waits for
its newline), each batch with the byte offset it starts at. The server takes a batch
once (the same batch again changes nothing) and answers 409 with its own offset when a
batch does not continue what it holds. The offset of every file and two fingerprints
(its first block and the block before the offset) are kept in a small state file,
written after each batch the server took: after a restart, a sleep or a dropped
connection the client goes on from there; a file that is shorter, another inode or
different before the offset was rewritten, and is sent whole again.

With --write-back, the lines piweb added (a reviewer continued the session in the
browser) are appended to pi's file, in one append, once the file has not changed for
--quiet seconds and the server has all of it; pi then resumes with them.
"""

from __future__ import annotations

import argparse
import base64
import getpass
import hashlib
import json
import os
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

BLOCK = 8192
BATCH_BYTES = 8 << 20  # the most one request sends (the server takes up to 16 MiB)
MAX_DELAY = 10.0


class Refused(Exception):
    """The server refused for good: a file it cannot take, or (`fatal`) the token."""

    def __init__(self, message: str, fatal: bool = False, status: int = 0):
        super().__init__(message)
        self.fatal = fatal
        self.status = status


class Conflict(Exception):
    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


# --- the server ---------------------------------------------------------------------


class Server:
    def __init__(self, url: str, token: str, client: str, timeout: float = 60.0):
        self.url = url.rstrip("/")
        self.token = token
        self.client = client
        self.timeout = timeout
        self.raw_push = True

    def call(
        self,
        method: str,
        path: str,
        body: dict | None = None,
        params=None,
        *,
        raw: bytes | None = None,
    ) -> dict:
        """One request, tried again (waiting longer each time) while the server cannot be
        reached or answers 5xx or 429; a 4xx other than 404 and 409 is `Refused`. The
        body is `body` as JSON, or `raw` as it is (JSON lines)."""
        url = f"{self.url}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        data = raw if raw is not None else json.dumps(body).encode() if body is not None else None
        kind = "application/x-ndjson" if raw is not None else "application/json"
        delay = 0.2
        while True:
            request = urllib.request.Request(url, data=data, method=method)
            request.add_header("Authorization", f"Bearer {self.token}")
            if data is not None:
                request.add_header("Content-Type", kind)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return json.loads(response.read() or b"{}")
            except urllib.error.HTTPError as exc:
                answer = _json_of(exc)
                if exc.code == 409:
                    offset = answer.get("offset", 0)
                    raise Conflict(answer.get("error", "conflict"), offset) from None
                if exc.code == 404:
                    return {"missing": True, **answer}
                if exc.code < 500 and exc.code != 429:
                    message = f"{exc.code}: {answer.get('error', exc.reason)}"
                    fatal = exc.code in (401, 403)
                    raise Refused(message, fatal=fatal, status=exc.code) from None
                note(f"server answered {exc.code}; trying again in {delay:.1f}s")
            except (urllib.error.URLError, OSError, ValueError) as exc:
                note(f"server not reachable ({_reason(exc)}); trying again in {delay:.1f}s")
            time.sleep(delay)
            delay = min(MAX_DELAY, delay * 2)

    def push(self, path: str, offset: int, data: bytes, rewrite: bool = False) -> dict:
        """Send lines: as the body itself (`files/push.jsonl`: no JSON string to escape
        and parse, several times faster for a backlog), or, for a server without that
        route, in a JSON body (`files/push`)."""
        if self.raw_push:
            params = {"client": self.client, "path": path, "offset": offset}
            if rewrite:
                params["rewrite"] = "true"
            answer = self.call("POST", "files/push.jsonl", params=params, raw=data)
            if not (answer.get("missing") and "code" not in answer):
                return answer
            self.raw_push = False  # an older server (its 404 page, not the API's answer)
        body = {"client": self.client, "path": path, "offset": offset, "rewrite": rewrite}
        try:
            body["data"] = data.decode("utf-8")
        except UnicodeDecodeError:
            body.update(data=base64.b64encode(data).decode(), encoding="base64")
        return self.call("POST", "files/push", body)

    def pending(self) -> list[dict]:
        return self.call("GET", "files/pending", params={"client": self.client})["files"]


def _json_of(exc: urllib.error.HTTPError) -> dict:
    try:
        return json.loads(exc.read() or b"{}")
    except (ValueError, OSError):
        return {}


def _reason(exc: Exception) -> str:
    return str(getattr(exc, "reason", None) or exc)


def note(message: str) -> None:
    print(f"piweb_sync: {message}", file=sys.stderr, flush=True)


# --- the state file -------------------------------------------------------------------


class State:
    """{path: {offset, device, inode, head, tail}} for one server, written atomically."""

    def __init__(self, path: str):
        self.path = path
        try:
            with open(path, encoding="utf-8") as fh:
                self.files = json.load(fh)
        except FileNotFoundError:
            self.files = {}

    def save(self) -> None:
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        tmp = f"{self.path}.tmp-{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(self.files, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)


def default_state_path(server: str) -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    name = hashlib.sha256(server.rstrip("/").encode()).hexdigest()[:12]
    return os.path.join(base, "piweb_sync", f"{name}.json")


# --- one file -------------------------------------------------------------------------


def _hash(fh, start: int, end: int) -> str:
    fh.seek(start)
    return hashlib.blake2b(fh.read(max(0, end - start)), digest_size=16).hexdigest()


def marks_at(fh, offset: int) -> tuple[str, str]:
    return _hash(fh, 0, min(offset, BLOCK)), _hash(fh, max(0, offset - BLOCK), offset)


def complete_end(fh, start: int, end: int) -> int:
    """The end of the last complete line in [start, end); `start` when there is none."""
    position = end
    while position > start:
        step = max(start, position - (1 << 16))
        fh.seek(step)
        newline = fh.read(position - step).rfind(b"\n")
        if newline >= 0:
            return step + newline + 1
        position = step
    return start


def shown_path(path: str) -> str:
    """The path as the server shows it: the home folder as ~."""
    home = os.path.expanduser("~").rstrip(os.sep)
    return "~" + path[len(home) :] if path.startswith(home + os.sep) else path


class Syncer:
    def __init__(self, server: Server, state: State, quiet: float = 5.0):
        self.server = server
        self.state = state
        self.quiet = quiet
        self.batch = BATCH_BYTES  # halved when the server finds a request too big

    def sync_file(self, path: str) -> int:
        """Send what the server lacks of one file; the bytes sent."""
        try:
            fh = open(path, "rb")  # noqa: SIM115 (closed below)
        except FileNotFoundError:
            return 0
        with fh:
            st = os.fstat(fh.fileno())
            known = self.state.files.get(path)
            if known and self._rewritten(fh, st, known):
                note(f"{path} was rewritten: sending it whole")
                return self._send_whole(path, fh, st)
            return self._send_from(path, fh, st, known["offset"] if known else 0)

    def _rewritten(self, fh, st, known: dict) -> bool:
        return (
            (st.st_dev, st.st_ino) != (known["device"], known["inode"])
            or st.st_size < known["offset"]
            or list(marks_at(fh, known["offset"])) != [known["head"], known["tail"]]
        )

    def _send_whole(self, path, fh, st) -> int:
        end = complete_end(fh, 0, st.st_size)
        if end == 0:
            return 0
        fh.seek(0)
        self.server.push(shown_path(path), 0, fh.read(end), rewrite=True)
        self._remember(path, fh, st, end)
        return end

    def _send_from(self, path, fh, st, offset: int) -> int:
        sent = 0
        end = complete_end(fh, offset, st.st_size)
        while offset < end:
            stop = complete_end(fh, offset, min(end, offset + self.batch))
            if stop == offset:  # one line longer than a batch: send it alone
                fh.seek(offset)
                stop = offset + len(fh.readline())
            fh.seek(offset)
            data = fh.read(stop - offset)
            try:
                self.server.push(shown_path(path), offset, data)
            except Refused as exc:
                if exc.status != 413 or self.batch <= 1 << 16:
                    raise
                self.batch //= 2  # the server takes less per request: send less
                continue
            except Conflict as exc:
                if exc.offset < offset:
                    offset = exc.offset  # the server has less: go on from its end
                    continue
                raise Refused(f"{path} differs from the server's copy: {exc}") from None
            offset = stop
            sent += len(data)
            self._remember(path, fh, st, offset)
        return sent

    def _remember(self, path, fh, st, offset: int) -> None:
        head, tail = marks_at(fh, offset)
        self.state.files[path] = {
            "offset": offset,
            "device": st.st_dev,
            "inode": st.st_ino,
            "head": head,
            "tail": tail,
        }
        self.state.save()

    # -- write-back --------------------------------------------------------------------

    def write_back(self, paths_by_shown: dict[str, str]) -> int:
        """Append piweb's lines to the files they belong to, where pi is quiet; the
        number of lines written."""
        written = 0
        for item in self.server.pending():
            path = paths_by_shown.get(item["path"])
            lines = [entry["line"] for entry in item["piweb_lines"]]
            if path and lines:
                written += self._append_quietly(path, lines)
        return written

    def _append_quietly(self, path: str, lines: list[str]) -> int:
        known = self.state.files.get(path)
        try:
            st = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            return 0
        if known is None or st.st_size != known["offset"] or st.st_ino != known["inode"]:
            return 0  # not all of it is on the server yet: after the next push
        if time.time() - st.st_mtime < self.quiet:
            return 0  # pi is writing it
        data = "".join(line + "\n" for line in lines).encode("utf-8", "surrogatepass")
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        note(f"{path}: wrote back {len(lines)} line(s) from piweb")
        self.sync_file(path)
        return len(lines)


# --- folders --------------------------------------------------------------------------


def session_files(root: str) -> list[str]:
    """Every *.jsonl under `root` (symbolic links not followed), sorted."""
    found = []
    for folder, subfolders, names in os.walk(root):
        subfolders.sort()
        paths = (os.path.join(folder, n) for n in sorted(names) if n.endswith(".jsonl"))
        found.extend(p for p in paths if not os.path.islink(p))
    return found


def _changed(path: str, seen: dict) -> bool:
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        seen.pop(path, None)
        return False
    key = (st.st_size, st.st_mtime_ns, st.st_ino)
    if seen.get(path) == key:
        return False
    seen[path] = key
    return True


def _wakeups(roots: list[str], interval: float):
    """Yields whenever something may have changed: on a change when watchfiles is
    installed (and at least every few seconds), else every `interval` seconds."""
    try:
        from watchfiles import watch
    except ImportError:
        while True:
            yield
            time.sleep(interval)
    yield
    for _changes in watch(*roots, yield_on_timeout=True, rust_timeout=2000, debounce=20, step=10):
        yield


def _sync_noting(syncer: Syncer, path: str) -> None:
    """Sync one file; a refusal of that file is reported and left until it changes."""
    try:
        sent = syncer.sync_file(path)
    except Refused as exc:
        if exc.fatal:
            raise
        note(f"{path}: {exc}")
        return
    if sent:
        note(f"{path}: sent {sent} bytes")


def follow(syncer: Syncer, roots: list[str], *, write_back: bool, interval: float) -> None:
    seen: dict = {}
    last_pull = 0.0
    for _ in _wakeups(roots, interval):
        paths = [p for root in roots for p in session_files(root)]
        for path in paths:
            if _changed(path, seen):
                _sync_noting(syncer, path)
        if write_back and time.monotonic() - last_pull >= interval * 5:
            last_pull = time.monotonic()
            syncer.write_back({shown_path(p): p for p in paths})


# --- command line ---------------------------------------------------------------------


def _arguments(argv):
    parser = argparse.ArgumentParser(prog="piweb_sync.py", description=__doc__.split("\n")[0])
    parser.add_argument("--server", default=os.environ.get("PIWEB_SERVER"))
    parser.add_argument("--token", default=os.environ.get("PIWEB_TOKEN"))
    parser.add_argument(
        "--client",
        default=f"{getpass.getuser()}'s {socket.gethostname()}",
        help="this machine's name on the server",
    )
    parser.add_argument("--state", help="the state file (default: ~/.local/state/piweb_sync/)")
    commands = parser.add_subparsers(dest="command", required=True)
    follow_cmd = commands.add_parser("follow", help="send session folders live")
    follow_cmd.add_argument("folders", nargs="+")
    follow_cmd.add_argument("--write-back", action="store_true")
    follow_cmd.add_argument("--interval", type=float, default=0.1, help="seconds between looks")
    follow_cmd.add_argument("--quiet", type=float, default=5.0, help="pi's quiet seconds")
    push_cmd = commands.add_parser("push", help="send session files once")
    push_cmd.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    if not args.server or not args.token:
        parser.error("--server and --token (or PIWEB_SERVER and PIWEB_TOKEN) are needed")
    return args


def main(argv=None) -> int:
    args = _arguments(argv)
    server = Server(args.server, args.token, args.client)
    state = State(args.state or default_state_path(args.server))
    try:
        if args.command == "push":
            syncer = Syncer(server, state)
            for path in args.files:
                sent = syncer.sync_file(os.path.abspath(path))
                print(f"{path}: sent {sent} bytes")
            return 0
        syncer = Syncer(server, state, quiet=args.quiet)
        roots = [os.path.abspath(os.path.expanduser(f)) for f in args.folders]
        follow(syncer, roots, write_back=args.write_back, interval=args.interval)
    except Refused as exc:
        note(str(exc))
        return 2
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
