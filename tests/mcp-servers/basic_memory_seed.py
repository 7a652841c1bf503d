"""Seed a real `basic-memory` MCP server (PyPI basic-memory, pinned in
requirements-basic-memory.txt) with five lab-hardware notes, through its own `write_note` tool,
over stdio with the official Python MCP SDK client (mcp 2.x, tests/mcp-peers/requirements-client.txt).

Everything the server keeps lives under one directory HOME, isolated from the user's home:

  HOME/notes   the project "main" (BASIC_MEMORY_HOME): the Markdown files
  HOME/config  config.json, memory.db (SQLite + FTS5), basic-memory.log (BASIC_MEMORY_CONFIG_DIR)
  HOME/home    $HOME of the server process (nothing of basic-memory's own lands there)

`server_env(home)` is the environment that does this and keeps the server off the network
(no PyPI auto-update check, no analytics, no Logfire, no FastMCP update check, no model
download); `server_argv(exe)` is the command. A test driver that starts the server itself
(e.g. as a stdio store of the callosum) uses the same two, after `seed(home)` has run.

Importable:   from basic_memory_seed import seed, server_env, server_argv, vector_search_off, NOTES
Runnable:     python basic_memory_seed.py --home DIR [--exe PATH/TO/basic-memory] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

PROJECT = "main"  # the project basic-memory creates from BASIC_MEMORY_HOME on first start
DIRECTORY = "lab"  # folder of the notes inside the project
START_TIMEOUT = 90.0  # seconds: spawn + initialize (a cold start migrates a new memory.db)
INDEX_TIMEOUT = 60.0  # seconds for every written note to be on disk and found by search_notes
REQUEST_TIMEOUT = 30.0  # seconds, one request

# Five notes. "xavier" is in all five, "cuda" in three and "backup" in two, so a search for
# one of those words has several hits whose order is the server's ranking (FTS5 bm25: a word in
# more than half of the indexed rows scores about -1e-6, so "xavier" ranks the note with it in
# its title first and the other four by tiny, partly tied scores, ties in index-row order).
NOTES: list[dict[str, Any]] = [
    {
        "title": "Jetson Xavier",
        "content": "# Jetson Xavier\n\n"
        "The Jetson AGX Xavier dev kit sits in the lab rack and runs JetPack 5.1.2 with CUDA 11.4.\n"
        "Its root filesystem is copied to the NAS every night as part of the lab backup.\n",
        "tags": ["hardware", "jetson"],
    },
    {
        "title": "NAS Backup",
        "content": "# NAS Backup\n\n"
        "The Synology NAS holds the nightly backup of every lab machine under nas:/srv/backup.\n"
        "A backup is kept for 30 days; the Xavier image is the largest one.\n",
        "tags": ["storage", "backup"],
    },
    {
        "title": "CUDA Toolkit",
        "content": "# CUDA Toolkit\n\n"
        "CUDA 12.2 is installed on the workstation; the Xavier stays on CUDA 11.4 because JetPack 5 "
        "ships that release. Kernels are built with nvcc for both targets.\n",
        "tags": ["software", "cuda"],
    },
    {
        "title": "Workstation GPU",
        "content": "# Workstation GPU\n\n"
        "The workstation has an RTX 4090 with 24 GB of memory, driver 535, and runs the CUDA "
        "training jobs that are too big for the Xavier.\n",
        "tags": ["hardware", "gpu"],
    },
    {
        "title": "Lab Rack",
        "content": "# Lab Rack\n\n"
        "The rack in room 4.12 holds the Xavier, the NAS, a 10 GbE switch and the UPS.\n",
        "tags": ["place"],
    },
]


def layout(home: Path) -> dict[str, Path]:
    home = Path(home).resolve()
    return {"notes": home / "notes", "config": home / "config", "user_home": home / "home"}


def server_env(home: Path) -> dict[str, str]:
    """The environment that pins every path of the server under `home` and turns off each
    thing that could reach the network. Read from basic-memory 0.24.1's source:

    - BASIC_MEMORY_CONFIG_DIR: config.json, memory.db, basic-memory.log, fastembed_cache
      (config_models.resolve_data_dir; it wins over XDG_CONFIG_HOME and ~/.basic-memory).
    - BASIC_MEMORY_HOME: the path of the "main" project created when config has no project
      (BasicMemoryConfig.projects default / model_post_init). It is read on first start only;
      after that config.json holds the path.
    - HOME: everything else that looks at ~ (CLI auth tokens, huggingface, logfire).
    - BASIC_MEMORY_AUTO_UPDATE=false: `basic-memory mcp` over stdio starts a thread that asks
      PyPI for a newer version and may self-upgrade (cli/commands/mcp.py, cli/auto_update.py).
    - BASIC_MEMORY_NO_PROMOS=1: no cloud promo and no Umami analytics event (cli/promo.py,
      cli/analytics.py).
    - BASIC_MEMORY_FORCE_LOCAL + BASIC_MEMORY_EXPLICIT_ROUTING: every tool routes to the
      in-process API, never to cloud.basicmemory.com (mcp/async_client.get_client).
    - BASIC_MEMORY_LOGFIRE_ENABLED=false: Logfire off (its default, pinned).
    - BASIC_MEMORY_DEFAULT_SEARCH_TYPE=text: search_notes without a search_type runs FTS5
      keyword search. Semantic (vector) search has no off switch in 0.24.1: it is on wherever
      Python's sqlite3 can load the sqlite-vec extension (repository/semantic_runtime.py), and
      then indexing and write_note's similar-note probe embed with fastembed, which loads its
      model from the hub. The pyenv CPython builds of this project's machines have no
      enable_load_extension, so the server logs "Semantic search disabled ... Falling back to
      keyword-only search" at start and embeds nothing; `vector_search_off(home)` checks that
      line. (Debian's /usr/bin/python3 could load it, but is 3.11: basic-memory needs 3.12.)
    - HF_HUB_OFFLINE=1: should vectors be on after all, fastembed/huggingface_hub never
      download (fastembed common/model_management.download_model turns it into
      local_files_only), so the embedding fails instead of reaching the network.
    - FASTMCP_CHECK_FOR_UPDATES=off, FASTMCP_SHOW_SERVER_BANNER=false: no FastMCP version check.
    """
    paths = layout(home)
    return {
        "HOME": str(paths["user_home"]),
        "BASIC_MEMORY_CONFIG_DIR": str(paths["config"]),
        "BASIC_MEMORY_HOME": str(paths["notes"]),
        "BASIC_MEMORY_AUTO_UPDATE": "false",
        "BASIC_MEMORY_NO_PROMOS": "1",
        "BASIC_MEMORY_FORCE_LOCAL": "true",
        "BASIC_MEMORY_EXPLICIT_ROUTING": "true",
        "BASIC_MEMORY_LOGFIRE_ENABLED": "false",
        "BASIC_MEMORY_DEFAULT_SEARCH_TYPE": "text",
        "HF_HUB_OFFLINE": "1",
        "FASTMCP_CHECK_FOR_UPDATES": "off",
        "FASTMCP_SHOW_SERVER_BANNER": "false",
    }


def find_exe(exe: str | None = None) -> str:
    """The basic-memory console script: `exe`, else $BASIC_MEMORY_EXE, else on PATH."""
    found = exe or os.environ.get("BASIC_MEMORY_EXE") or shutil.which("basic-memory")
    if not found:
        raise FileNotFoundError("basic-memory not found: pass exe= / --exe, or set BASIC_MEMORY_EXE")
    return found


def server_argv(exe: str | None = None) -> list[str]:
    return [find_exe(exe), "mcp", "--transport", "stdio"]


def server_params(home: Path, exe: str | None = None) -> StdioServerParameters:
    argv = server_argv(exe)
    return StdioServerParameters(command=argv[0], args=argv[1:], env=server_env(home), cwd=str(layout(home)["user_home"]))


def vector_search_off(home: Path) -> bool:
    """Whether the server under `home` logged at start that it runs keyword-only search (no
    sqlite-vec, so nothing is embedded and no embedding model is loaded)."""
    log = layout(home)["config"] / "basic-memory.log"
    return log.is_file() and "Falling back to keyword-only search" in log.read_text(errors="replace")


def prepare(home: Path) -> None:
    for path in layout(home).values():
        path.mkdir(parents=True, exist_ok=True)


def result_of(result: Any) -> Any:
    """A FastMCP tool's answer: structuredContent wraps it as {"result": ...}."""
    texts = [b.text for b in result.content if getattr(b, "type", None) == "text"]
    if result.is_error:
        raise RuntimeError(f"tool error: {texts}")
    if isinstance(result.structured_content, dict) and "result" in result.structured_content:
        return result.structured_content["result"]
    return json.loads(texts[0])


async def search_json(client: Client, query: str, **arguments: Any) -> dict[str, Any]:
    answer = result_of(await client.call_tool("search_notes", {"query": query, "output_format": "json", **arguments},
                                              read_timeout_seconds=REQUEST_TIMEOUT))
    if not isinstance(answer, dict):
        raise RuntimeError(f"search_notes json answered {answer!r}")
    return answer


async def seed_client(client: Client, home: Path, notes: list[dict[str, Any]] = NOTES) -> list[dict[str, Any]]:
    """Writes `notes` with write_note on an open session and waits until each is on disk and
    found by a full-text search_notes for its title. Returns write_note's JSON answers."""
    written = []
    for note in notes:
        answer = result_of(await client.call_tool("write_note", {
            "title": note["title"], "content": note["content"], "directory": DIRECTORY,
            "tags": note.get("tags"), "output_format": "json",
        }, read_timeout_seconds=REQUEST_TIMEOUT))
        if not isinstance(answer, dict) or answer.get("action") not in ("created", "updated"):
            raise RuntimeError(f"write_note {note['title']!r} answered {answer!r}")
        written.append(answer)

    # A local write is accepted before its file is written and indexed: wait for both.
    notes_dir = layout(home)["notes"]
    pending = {w["permalink"]: w for w in written}
    with anyio.fail_after(INDEX_TIMEOUT):
        while pending:
            for permalink, w in list(pending.items()):
                if not (notes_dir / w["file_path"]).is_file():
                    continue
                hits = (await search_json(client, f'"{w["title"]}"', page_size=50)).get("results", [])
                if any(h.get("permalink") == permalink for h in hits):
                    del pending[permalink]
            if pending:
                await anyio.sleep(0.1)
    return written


async def seed_async(home: Path, exe: str | None = None, notes: list[dict[str, Any]] = NOTES) -> list[dict[str, Any]]:
    home = Path(home)
    prepare(home)
    with (layout(home)["config"] / "seed-stderr.log").open("a") as errlog:
        with anyio.fail_after(START_TIMEOUT + INDEX_TIMEOUT + REQUEST_TIMEOUT * len(notes)):
            # The client's own read timeout bounds `initialize`, which a cold start answers only
            # after importing the server and migrating memory.db; each tool call passes its own.
            async with Client(stdio_client(server_params(home, exe), errlog=errlog), mode="legacy",
                              read_timeout_seconds=START_TIMEOUT) as client:
                return await seed_client(client, home, notes)


def seed(home: Path, exe: str | None = None, notes: list[dict[str, Any]] = NOTES) -> list[dict[str, Any]]:
    """Starts basic-memory over stdio with everything under `home`, writes `notes`, waits until
    they are searchable, and ends the server. Returns write_note's JSON answer per note
    (title, permalink, file_path, checksum, action, similar_notes). Run it on a fresh `home`:
    write_note refuses to overwrite an existing note."""
    return anyio.run(seed_async, home, exe, notes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", required=True, type=Path, help="directory for notes, config and db (created)")
    parser.add_argument("--exe", help="the basic-memory executable (default: $BASIC_MEMORY_EXE or PATH)")
    parser.add_argument("--json", action="store_true", help="print write_note's answers as JSON")
    args = parser.parse_args()
    started = time.monotonic()
    written = seed(args.home, args.exe)
    if args.json:
        print(json.dumps(written, indent=1))
    else:
        for w in written:
            print(f"{w['action']}  {w['permalink']}  {w['file_path']}")
    print(f"seeded {len(written)} notes under {layout(args.home)['notes']} in {time.monotonic() - started:.1f}s",
          file=sys.stderr)
    if not vector_search_off(args.home):
        print("warning: basic-memory did not log keyword-only search: vector search may be on and "
              "try to load an embedding model", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
