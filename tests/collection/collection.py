"""The test collection: Python's own standard library documentation, as the Python running this ships it.

A known-item collection: each document is one public function, method or class of a stdlib module
(MODULES, fixed and sorted here), written as its qualified name, its signature and its docstring
WITHOUT the docstring's first sentence (its summary); each query is one such summary, and the one
relevant document (grade 1) is the routine it summarises. Removing the summary from the document
keeps a lexical store from finding the query verbatim in its answer: a store has to match the rest
of the docstring, the name and the signature to the summary, as a person searching documentation
does.

What is kept, in this order, each step deterministic (sorted module and attribute names):

1. Each module of MODULES that imports here (a module this Python lacks is listed in `missing`).
2. Its public attributes (no leading `_`) defined in it (`__module__` is the module, or the module
   with one leading `_`, as `_io` for `io`): functions and classes, and the public methods,
   class methods and static methods each class defines itself (not inherited), each with a
   docstring of its own. The same object under two names counts once, under the first.
3. The docstring (inspect.cleandoc) split into its first sentence (the summary: the first
   paragraph up to the first `. ` or its end) and the rest (the body). An old-style first line that
   is only a signature (`strftime(format[, tuple]) -> string`) is taken as the signature, and the
   summary is the sentence after it.
4. Kept when the summary has 4 to 30 words and the body at least MIN_BODY_WORDS words (a body of a
   few words says too little to be found by).
5. A docstring shared by several routines (aliases, copies) is kept once, under the first name;
   then a summary shared by several routines drops them all (a query must have one answer); then a
   document whose text holds its own summary, compared in lower case with whitespace collapsed,
   is dropped (a lexical store would find the query verbatim).

The queries: QUERIES documents chosen by the SHA-256 of SEED and their id, smallest first, each
asking for its summary. `build()` returns the documents, the queries and a SHA-256 of both, the
collection's fingerprint (the dense store's embeddings are cached under it).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import platform
import re
import sys
import warnings
from dataclasses import dataclass

# The stdlib modules read, sorted. Left out: the `encodings` codecs, modules removed or deprecated
# for removal by Python 3.13 (aifc, asynchat, asyncore, audioop, cgi, cgitb, chunk, crypt, imghdr,
# imp, mailcap, nis, nntplib, ossaudiodev, pipes, smtpd, sndhdr, spwd, sunau, telnetlib, uu, xdrlib;
# sre_*, xml.etree.cElementTree), what does something on import or needs a display (antigravity,
# this, idlelib, tkinter, turtle, turtledemo), the build and install tools (distutils, ensurepip,
# lib2to3, venv), Windows-only modules, test packages and private modules.
MODULES = (
    "abc", "argparse", "array", "ast", "asyncio", "asyncio.base_events", "asyncio.base_futures",
    "asyncio.base_subprocess", "asyncio.base_tasks", "asyncio.constants", "asyncio.coroutines",
    "asyncio.events", "asyncio.exceptions", "asyncio.format_helpers", "asyncio.futures",
    "asyncio.locks", "asyncio.log", "asyncio.mixins", "asyncio.proactor_events", "asyncio.protocols",
    "asyncio.queues", "asyncio.runners", "asyncio.selector_events", "asyncio.sslproto",
    "asyncio.staggered", "asyncio.streams", "asyncio.subprocess", "asyncio.taskgroups",
    "asyncio.tasks", "asyncio.threads", "asyncio.timeouts", "asyncio.transports", "asyncio.trsock",
    "asyncio.unix_events", "atexit", "base64", "bdb", "binascii", "bisect", "builtins", "bz2",
    "cProfile", "calendar", "cmath", "cmd", "code", "codecs", "codeop", "collections",
    "collections.abc", "colorsys", "compileall", "concurrent", "concurrent.futures",
    "concurrent.futures.process", "concurrent.futures.thread", "configparser", "contextlib",
    "contextvars", "copy", "copyreg", "csv", "ctypes", "ctypes.macholib", "ctypes.macholib.dyld",
    "ctypes.macholib.dylib", "ctypes.macholib.framework", "ctypes.util", "curses", "curses.ascii",
    "curses.has_key", "curses.panel", "curses.textpad", "dataclasses", "datetime", "dbm",
    "dbm.dumb", "decimal", "difflib", "dis", "doctest", "email", "email.base64mime",
    "email.charset", "email.contentmanager", "email.encoders", "email.errors", "email.feedparser",
    "email.generator", "email.header", "email.headerregistry", "email.iterators", "email.message",
    "email.mime", "email.mime.application", "email.mime.audio", "email.mime.base",
    "email.mime.image", "email.mime.message", "email.mime.multipart", "email.mime.nonmultipart",
    "email.mime.text", "email.parser", "email.policy", "email.quoprimime", "email.utils", "enum",
    "errno", "faulthandler", "fcntl", "filecmp", "fileinput", "fnmatch", "fractions", "ftplib",
    "functools", "gc", "genericpath", "getopt", "getpass", "gettext", "glob", "graphlib", "grp",
    "gzip", "hashlib", "heapq", "hmac", "html", "html.entities", "html.parser", "http",
    "http.client", "http.cookiejar", "http.cookies", "http.server", "imaplib", "importlib",
    "importlib.abc", "importlib.machinery", "importlib.metadata", "importlib.readers",
    "importlib.resources", "importlib.resources.abc", "importlib.resources.readers",
    "importlib.resources.simple", "importlib.simple", "importlib.util", "inspect", "io",
    "ipaddress", "itertools", "json", "json.decoder", "json.encoder", "json.scanner", "json.tool",
    "keyword", "linecache", "locale", "logging", "logging.config", "logging.handlers", "lzma",
    "mailbox", "marshal", "math", "mimetypes", "mmap", "modulefinder", "multiprocessing",
    "multiprocessing.connection", "multiprocessing.context", "multiprocessing.dummy",
    "multiprocessing.dummy.connection", "multiprocessing.forkserver", "multiprocessing.heap",
    "multiprocessing.managers", "multiprocessing.pool", "multiprocessing.popen_fork",
    "multiprocessing.popen_forkserver", "multiprocessing.popen_spawn_posix",
    "multiprocessing.process", "multiprocessing.queues", "multiprocessing.reduction",
    "multiprocessing.resource_sharer", "multiprocessing.resource_tracker",
    "multiprocessing.shared_memory", "multiprocessing.sharedctypes", "multiprocessing.spawn",
    "multiprocessing.synchronize", "multiprocessing.util", "netrc", "ntpath", "nturl2path",
    "numbers", "opcode", "operator", "optparse", "os", "pathlib", "pdb", "pickle", "pickletools",
    "pkgutil", "platform", "plistlib", "poplib", "posix", "posixpath", "pprint", "profile",
    "pstats", "pty", "pwd", "py_compile", "pyclbr", "pydoc", "pyexpat", "queue", "quopri",
    "random", "re", "readline", "reprlib", "resource", "rlcompleter", "runpy", "sched", "secrets",
    "select", "selectors", "shelve", "shlex", "shutil", "signal", "site", "smtplib", "socket",
    "socketserver", "sqlite3", "sqlite3.dbapi2", "sqlite3.dump", "ssl", "stat", "statistics",
    "string", "stringprep", "struct", "subprocess", "symtable", "sys", "sysconfig", "syslog",
    "tabnanny", "tarfile", "tempfile", "termios", "textwrap", "threading", "time", "timeit",
    "token", "tokenize", "tomllib", "trace", "traceback", "tracemalloc", "tty", "types", "typing",
    "unicodedata", "unittest", "unittest.async_case", "unittest.case", "unittest.loader",
    "unittest.main", "unittest.mock", "unittest.result", "unittest.runner", "unittest.signals",
    "unittest.suite", "unittest.util", "urllib", "urllib.error", "urllib.parse", "urllib.request",
    "urllib.response", "urllib.robotparser", "uuid", "warnings", "wave", "weakref", "webbrowser",
    "wsgiref", "wsgiref.handlers", "wsgiref.headers", "wsgiref.simple_server", "wsgiref.types",
    "wsgiref.util", "wsgiref.validate", "xml", "xml.dom", "xml.dom.NodeFilter", "xml.dom.domreg",
    "xml.dom.expatbuilder", "xml.dom.minicompat", "xml.dom.minidom", "xml.dom.pulldom",
    "xml.dom.xmlbuilder", "xml.etree", "xml.etree.ElementInclude", "xml.etree.ElementPath",
    "xml.etree.ElementTree", "xml.parsers", "xml.parsers.expat", "xml.sax", "xml.sax.expatreader",
    "xml.sax.handler", "xml.sax.saxutils", "xml.sax.xmlreader", "xmlrpc", "xmlrpc.client",
    "xmlrpc.server", "zipapp", "zipfile", "zipimport", "zlib", "zoneinfo",
)

MIN_BODY_WORDS = 15
SUMMARY_WORDS = (4, 30)
QUERIES = 500
SEED = "seren-corpus-callosum collection 1"

WORD = re.compile(r"\w+")
# The end of the first sentence: a period (or ! ?) followed by whitespace. Abbreviations such as
# "e.g. " end a sentence here too; the summary is then shorter, and still the document's own.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# An old-style first line that is only a signature: `name(args) -> result` or `name(args)`.
SIGNATURE_LINE = re.compile(r"^[A-Za-z_][\w.]*\(.*\)(\s*->\s*.*)?$")
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


@dataclass(frozen=True)
class Document:
    id: str  # the qualified name: module.function, module.Class, module.Class.method
    summary: str  # the docstring's first sentence: the query that asks for this document
    text: str  # the qualified name and signature, a blank line, the docstring without its summary


@dataclass(frozen=True)
class Collection:
    documents: list[Document]
    queries: list[Document]  # the documents asked for, in the order chosen
    python: str  # the Python whose stdlib this is: version and implementation
    missing: list[str]  # MODULES this Python does not have
    fingerprint: str  # SHA-256 of every document and query, in order
    candidates: int  # the routines with a docstring, before the filters


def normal(text: str) -> str:
    return " ".join(text.lower().split())


def words(text: str) -> int:
    return len(WORD.findall(text))


def defined_in(obj: object, module: str) -> bool:
    owner = getattr(obj, "__module__", None)
    return isinstance(owner, str) and (owner == module or owner == "_" + module)


def own_doc(obj: object) -> str | None:
    """The object's own docstring (not one inherited from a base class), cleaned, or None."""
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    if not isinstance(doc, str) or not doc.strip():
        return None
    return inspect.cleandoc(doc)


def routines(modules: tuple[str, ...]) -> tuple[list[tuple[str, object, str]], list[str]]:
    """(qualified name, object, docstring) of every public routine and class of the modules that
    import, in module order then sorted name; and the modules that did not import."""
    found: list[tuple[str, object, str]] = []
    seen: set[int] = set()
    missing: list[str] = []

    def add(qual: str, obj: object) -> None:
        doc = own_doc(obj)
        if doc is None or id(obj) in seen:
            return
        seen.add(id(obj))
        found.append((qual, obj, doc))

    for name in modules:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = importlib.import_module(name)
        except ImportError:
            missing.append(name)
            continue
        space = vars(module)
        for attr in sorted(space):
            obj = space[attr]
            if attr.startswith("_") or not defined_in(obj, name):
                continue
            if inspect.isroutine(obj):
                add(f"{name}.{attr}", obj)
            elif inspect.isclass(obj):
                add(f"{name}.{attr}", obj)
                members = vars(obj)
                for member in sorted(members):
                    if member.startswith("_"):
                        continue
                    value = members[member]
                    if isinstance(value, (staticmethod, classmethod)):
                        value = value.__func__
                    if inspect.isroutine(value):
                        add(f"{name}.{attr}.{member}", value)
    return found, missing


def signature(obj: object) -> str | None:
    """The signature as inspect writes it, without the memory addresses some defaults' reprs hold
    (`<object object at 0x7f...>`), which differ from run to run."""
    try:
        return ADDRESS.sub("", str(inspect.signature(obj)))
    except Exception:  # noqa: BLE001 - no signature: a builtin without one, a default that cannot be read
        return None


def split(qual: str, obj: object, doc: str) -> tuple[str, str, str]:
    """(signature, summary, body) of a routine's docstring."""
    sig = signature(obj)
    lines = doc.splitlines()
    short = qual.rsplit(".", 1)[1]
    if lines and SIGNATURE_LINE.match(lines[0].strip()) and lines[0].lstrip().startswith(short + "("):
        # An old-style docstring that opens with its signature: that line is the signature.
        sig = sig or lines[0].strip()[len(short):]
        doc = "\n".join(lines[1:]).strip()
    paragraphs = re.split(r"\n\s*\n", doc.strip(), maxsplit=1)
    first = " ".join(paragraphs[0].split())
    rest = paragraphs[1].strip() if len(paragraphs) > 1 else ""
    sentence = SENTENCE_END.split(first, maxsplit=1)
    summary = sentence[0]
    body = "\n\n".join(part for part in (sentence[1] if len(sentence) > 1 else "", rest) if part)
    return sig or "(...)", summary, body


def build(modules: tuple[str, ...] = MODULES, queries: int = QUERIES, seed: str = SEED) -> Collection:
    found, missing = routines(modules)
    docs: list[tuple[str, str, str]] = []  # (id, summary, text)
    by_docstring: set[str] = set()
    for qual, obj, doc in found:
        sig, summary, body = split(qual, obj, doc)
        if not SUMMARY_WORDS[0] <= len(summary.split()) <= SUMMARY_WORDS[1] or words(body) < MIN_BODY_WORDS:
            continue
        key = normal(summary + " " + body)
        if key in by_docstring:  # the same docstring under another name: kept once, the first
            continue
        by_docstring.add(key)
        docs.append((qual, summary, f"{qual}{sig}\n\n{body}"))
    shared: dict[str, int] = {}
    for _, summary, _ in docs:
        shared[normal(summary)] = shared.get(normal(summary), 0) + 1
    documents = [Document(id_, summary, text) for id_, summary, text in docs
                 if shared[normal(summary)] == 1 and normal(summary) not in normal(text)]
    chosen = sorted(documents, key=lambda d: hashlib.sha256(f"{seed}\n{d.id}".encode()).hexdigest())[:queries]
    digest = hashlib.sha256()
    for d in documents:
        digest.update(json.dumps([d.id, d.summary, d.text]).encode() + b"\n")
    digest.update(json.dumps([d.id for d in chosen]).encode())
    python = f"{platform.python_implementation()} {platform.python_version()}"
    return Collection(documents, chosen, python, missing, digest.hexdigest(), len(found))


if __name__ == "__main__":
    # A look at the collection: `python3 collection.py [N]` prints its size and N sample queries
    # with their documents; `python3 collection.py --fingerprint` prints the fingerprint alone.
    c = build()
    if sys.argv[1:] == ["--fingerprint"]:
        print(c.fingerprint)
        sys.exit()
    print(f"{c.python}: {len(c.documents)} documents of {c.candidates} routines and classes with docstrings, "
          f"{len(c.queries)} queries, missing {c.missing}, fingerprint {c.fingerprint[:16]}")
    for d in c.queries[: int(sys.argv[1]) if len(sys.argv) > 1 else 3]:
        print(f"\nquery: {d.summary}\n--- {d.id}\n{d.text}")
