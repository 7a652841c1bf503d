"""The Python side of the suites' one harness (tests/harness/lib.sh is the shell side): what the
helpers under tests/ that start servers and judge answers all need, written once.

A helper imports it by putting this folder first on sys.path, relative to its own file:

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
    from harness import free_port, stop  # noqa: E402

and not through PYTHONPATH, which every Python program a suite starts would inherit (SerenLoci,
basic-memory, the Python callosum), and which a helper run by hand would lack. The standard library
only: a helper run outside any venv (tests/prometheus/scrape.py) imports it too.

- HIT_KEYS: the keys every hit of an answer carries.
- CheckFailed, check, flatten, describe, run_cases: a case's verdict, and one `ok`/`FAIL` line each.
- free_port: a loopback port for a server that must be told its port.
- http_ok, wait_until, wait_line, wait_http, NotReady: waiting for a process to be ready; its exit
  or the deadline first is NotReady, with its log's last lines.
- stop, children, alive: ending a process (and its process group); its children; whether it runs.
- Processes: a run's processes by name, each in a session of its own with its log in a scratch dir.
"""

from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import time
import traceback
import urllib.request
from pathlib import Path
from typing import Any, Callable

if sys.version_info < (3, 11):
    try:  # anyio brings the backport there
        from exceptiongroup import BaseExceptionGroup
    except ImportError:  # no anyio, so no exception group to flatten
        BaseExceptionGroup = ()

# Every key of a hit in an answer, over REST and MCP alike (src/api.rs `Hit`; tests/it/fan.rs holds
# the Rust side to the same nine). `explain` comes on top only when the search asked for it.
HIT_KEYS = ("store", "id", "content", "score", "store_rank", "base_relevance", "native_score", "raw_distance", "metadata")

STARTUP_TIMEOUT = 30.0  # seconds for a process to be ready, unless the caller says otherwise
STOP_GRACE = 10.0  # seconds a process gets after SIGTERM before SIGKILL
POLL = 0.05  # seconds between two looks while waiting


# --- verdicts --------------------------------------------------------------------------------------


class CheckFailed(Exception):
    """A check that did not hold: its case fails with this message (not an error of the harness)."""


def check(condition: Any, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def flatten(e: BaseException) -> list[BaseException]:
    """The leaves of an exception group (anyio's task groups raise them), or the exception alone."""
    if isinstance(e, BaseExceptionGroup):
        return [leaf for inner in e.exceptions for leaf in flatten(inner)]
    return [e]


def describe(e: BaseException) -> str:
    return "; ".join(f"{type(leaf).__name__}: {leaf}" for leaf in flatten(e))


def run_cases(cases: list[tuple[str, Callable[[Any], str]]], fixture: Any, verbose: bool) -> tuple[int, int]:
    """Runs each case on `fixture`, one `ok  NAME  DETAIL` or `FAIL  NAME  WHY` line each; an error
    fails its case, not the run. Returns (passed, failed)."""
    passed = failed = 0
    for name, case in cases:
        try:
            detail = case(fixture)
        except CheckFailed as e:
            print(f"FAIL  {name}  {e}", flush=True)
            failed += 1
        except Exception as e:  # noqa: BLE001 - an error fails its case, not the run
            print(f"FAIL  {name}  error: {type(e).__name__}: {e}", flush=True)
            if verbose:
                traceback.print_exc()
            failed += 1
        else:
            print(f"ok  {name}  {detail}", flush=True)
            passed += 1
    return passed, failed


# --- ports and readiness ---------------------------------------------------------------------------


def free_port() -> int:
    """A loopback port nothing listens on now. Only for a server that must be told its port before
    it starts (Prometheus, SerenLoci, nginx, PostgreSQL, a replica started again on its own port);
    one that takes port 0 and prints its address should be started so, as that cannot race."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NotReady(RuntimeError):
    """A process that exited, or was still not ready at its deadline."""


def tail(log: Path | str, lines: int = 15) -> str:
    """A log's last lines, indented, each cut to 240 characters (rmcp's info lines print whole
    structs); empty when there is no log."""
    try:
        text = Path(log).read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(f"      | {line[:240]}" for line in text.splitlines()[-lines:])


def wait_until(what: str, ready: Callable[[], Any], awaited: str, process: subprocess.Popen | None = None,
               timeout: float = STARTUP_TIMEOUT, log: Path | str | None = None) -> Any:
    """Polls `ready()` until it returns something true, and returns that. Raises NotReady, saying
    `what` and `awaited` and showing the end of `log`, when `process` exits first or `timeout`
    seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        value = ready()
        if value:
            return value
        if process is not None and process.poll() is not None:
            why = f"{what} exited with {process.returncode} before any {awaited}"
        elif time.monotonic() >= deadline:
            why = f"{what}: no {awaited} within {timeout:g} s"
        else:
            time.sleep(POLL)
            continue
        shown = tail(log) if log is not None else ""
        raise NotReady(f"{why}:\n{shown}" if shown else why)


def wait_line(what: str, log: Path | str, pattern: str, process: subprocess.Popen | None = None,
              timeout: float = STARTUP_TIMEOUT) -> re.Match:
    """The first match of `pattern` (a regex, ^ and $ per line) in the log file, once it is there."""

    def found() -> re.Match | None:
        try:
            return re.search(pattern, Path(log).read_text(errors="replace"), re.MULTILINE)
        except OSError:  # not written yet
            return None

    return wait_until(what, found, f"line matching /{pattern}/", process, timeout, log)


def http_ok(url: str, headers: dict[str, str] | None = None, timeout: float = 2.0) -> bool:
    """Whether a GET of `url` answers 200 now."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=timeout) as r:
            return r.status == 200
    except (OSError, http.client.HTTPException):  # refused, reset, an error status, a timeout
        return False


def wait_http(what: str, url: str, process: subprocess.Popen | None = None, timeout: float = STARTUP_TIMEOUT,
              log: Path | str | None = None, headers: dict[str, str] | None = None) -> None:
    """Waits until a GET of `url` (a /health, Prometheus's /-/ready) answers 200."""
    wait_until(what, lambda: http_ok(url, headers), f"HTTP 200 from {url}", process, timeout, log)


# --- processes -------------------------------------------------------------------------------------


def stop(process: subprocess.Popen, grace: float = STOP_GRACE, group: bool = False) -> None:
    """Ends `process`: SIGTERM, then SIGKILL if it still runs `grace` seconds on (SIGKILL at once when
    `grace` is 0, for a run that kills what it started on the way out). `group`: then SIGKILL what is
    left of the process group it leads (it was started with start_new_session=True), the servers a
    callosum spawned among them."""
    if process.poll() is None:
        if grace > 0:
            process.terminate()
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        else:
            process.kill()
            process.wait()
    if group:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):  # the group is gone already
            pass


def children(pid: int) -> list[int]:
    """The pids whose parent is `pid`, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # gone between listdir and read
            continue
        # The command sits in parentheses and may hold spaces; the ppid is the second field after it.
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class Processes:
    """Every process a run starts, by name, each in its own session so that its whole group (the
    stdio servers a callosum spawns included) can be ended by its id, whatever state the run ends
    in; each one's stdout and stderr go to WORK/NAME.log."""

    def __init__(self, work: Path, env: dict[str, str], startup_timeout: float = STARTUP_TIMEOUT,
                 stop_timeout: float = STOP_GRACE) -> None:
        self.work = work
        self.env = env
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.running: dict[str, subprocess.Popen] = {}

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        log = (self.work / f"{name}.log").open("w")
        proc = subprocess.Popen(argv, env=dict(self.env, **(env or {})), cwd=self.work, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.running[name] = proc
        return proc

    def log(self, name: str) -> str:
        return (self.work / f"{name}.log").read_text(errors="replace")

    def tail(self, name: str, lines: int = 15) -> str:
        return tail(self.work / f"{name}.log", lines)

    def wait_for_line(self, name: str, regex: str) -> re.Match:
        return wait_line(name, self.work / f"{name}.log", regex, self.running[name], self.startup_timeout)

    def wait_healthy(self, name: str, url: str) -> None:
        wait_http(name, url + "/health", self.running[name], self.startup_timeout, self.work / f"{name}.log")

    def stop(self, name: str) -> None:
        stop(self.running.pop(name), self.stop_timeout, group=True)

    def stop_all(self) -> None:
        for name in reversed(list(self.running)):
            self.stop(name)
