"""Reading LSP messages from the client's byte stream, and finding the next one after a bad one.

pygls's loop (pygls.io_.run_async) reads header lines until a blank line and
then exactly Content-Length bytes.  One malformed message broke it for good:
a header block without Content-Length made it read the next message's body
as a header line, glued to the header after it, so every later Content-Length
was lost and the server waited for ever; a Content-Length a few bytes short
or long left it reading bodies from the middle of messages, alive and silent.

This loop, installed in place of pygls's (gradlint.lsp.main), skips what is
malformed, says so in the client's log, and resynchronises on the next
`Content-Length:` header, wherever it starts (after the tail of a body that
was declared too short, or in the bytes a body declared too long swallowed):

- a header block without Content-Length, a header line that is no header, a
  length that is no number: skipped up to the next Content-Length header;
- a body that is not one JSON value of exactly its declared length: skipped;
  when it was too long, what follows its JSON value is the start of the next
  message and is read again as such;
- a declared length above MAX_BODY_BYTES: the body is read and dropped in
  pieces (never held whole), then reading goes on;
- a line longer than MAX_LINE_BYTES (no header is) is read in pieces;
- a body whose JSON nests deeper than MAX_NESTING (no LSP message nests past a
  few dozen levels): skipped.  Python's decoder recurses, and a RecursionError
  was no ValueError: one such message ended the session.

Well-formed messages are decoded and handed to pygls exactly as pygls does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any, Callable, Optional

logger = logging.getLogger(__name__)

MARK = b"content-length:"  # header names are matched without regard to case, as in HTTP
_LENGTH = re.compile(rb"content-length:[ \t]*(\d{1,12})[ \t]*\r?\n", re.I)
_NAME_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-")
MAX_LINE_BYTES = 64 * 1024
# The largest body read whole: a didOpen of a file at the size limit (8 MB), every character
# written as a \\uXXXX escape, fits.
MAX_BODY_BYTES = 64 * 1024 * 1024
MAX_NESTING = 512  # arrays and objects within each other; the decoder's own limit is about 1,000
_CHUNK = 1024 * 1024  # an oversized body is dropped in pieces of this size
_PIECE = 64 * 1024  # what one read of the stream asks for


class _Stream:
    """The client's stream, read in pieces and cut into lines here (so that no line, however long,
    is held whole), with bytes that can be put back (read past a message's start)."""

    def __init__(self, reader) -> None:
        self.reader = reader
        self.pending = b""

    async def _piece(self) -> bytes:
        """What the reader has now, at least one byte (b"" at the end of input)."""
        stdin = getattr(self.reader, "stdin", None)
        if stdin is not None:  # pygls's StdinAsyncReader: read in its thread
            read = getattr(stdin, "read1", None) or stdin.readline
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(getattr(self.reader, "executor", None), read, _PIECE)
        if isinstance(self.reader, asyncio.StreamReader):
            return await self.reader.read(_PIECE)
        return await self.reader.readline()  # another reader: its own lines

    async def readline(self) -> bytes:
        """The next line, or a piece of MAX_LINE_BYTES of a longer one; b"" at the end of input."""
        while True:
            end = self.pending.find(b"\n", 0, MAX_LINE_BYTES)
            if end >= 0 or len(self.pending) >= MAX_LINE_BYTES:
                cut = end + 1 if end >= 0 else MAX_LINE_BYTES
                line, self.pending = self.pending[:cut], self.pending[cut:]
                return line
            more = await self._piece()
            if not more:
                line, self.pending = self.pending, b""
                return line
            self.pending += more

    async def read(self, size: int) -> bytes:
        """`size` bytes, fewer only at the end of input."""
        data, self.pending = self.pending[:size], self.pending[size:]
        parts = [data]
        missing = size - len(data)
        while missing > 0:
            try:
                more = await self.reader.readexactly(missing)
            except asyncio.IncompleteReadError as exc:
                more = exc.partial
            if not more:
                break
            parts.append(more)
            missing -= len(more)
        return b"".join(parts)

    def put_back(self, data: bytes) -> None:
        self.pending = data + self.pending


async def next_body(stream: _Stream, skipped: Callable[[str], None]) -> Optional[bytes]:
    """The body of the next well-formed message (None at the end of input); every malformed
    message or stray byte before it is skipped and reported through `skipped(why)`."""
    junk = 0  # stray bytes before a header
    headers = False  # header lines (`Content-Type: ...`) read with no Content-Length yet
    quiet = False  # the junk is the body of a message already reported
    while True:
        line = await stream.readline()
        if not line:
            return None
        at = line.lower().find(MARK)
        if at < 0:
            if not line.endswith(b"\n") and len(line) >= MAX_LINE_BYTES:  # a piece of a long line
                keep = len(MARK) - 1  # a header may start at the end of this piece
                stream.put_back(line[-keep:])
                line = line[:-keep]
            if _is_header(line):
                headers = True  # legal before Content-Length; judged at the blank line
            elif line in (b"\r\n", b"\n") and headers:
                skipped("a message whose header has no Content-Length")
                headers, quiet = False, True
            elif not quiet:
                junk += len(line.strip())
            continue
        if not quiet:
            junk += len(line[:at].strip())
        if junk:
            skipped(f"{junk} bytes that were no message")
        junk, headers, quiet = 0, False, False
        match = _LENGTH.fullmatch(line, at)
        if match is None:
            skipped(f"a malformed header: {line[at:at + 40]!r}")
            quiet = True
            continue
        length = int(match.group(1))
        ended = await _rest_of_header_block(stream)
        if ended is None:
            return None
        if not ended:
            skipped("a header block that was cut short by another message")
            quiet = True
            continue
        if length > MAX_BODY_BYTES:
            await _drop(stream, length)
            skipped(f"a message of {length} bytes (more than {MAX_BODY_BYTES})")
            continue
        body = await stream.read(length)
        if len(body) < length:
            return None
        value = _one_json_value(body)
        if value is _TOO_DEEP:
            skipped(f"a message whose JSON is nested more than {MAX_NESTING} deep")
            continue
        if value is not None:
            return body
        extra = _after_json_value(body)
        if extra is not None:  # declared too long: the rest is the next message's start
            stream.put_back(extra)
            skipped(f"a message whose Content-Length ({length}) was {len(extra)} bytes too long")
        else:  # too short, or no JSON: what is left of it is skipped on the way to the next header
            skipped(f"a message whose body is not JSON of its Content-Length ({length})")
            quiet = True


async def _rest_of_header_block(stream: _Stream) -> Optional[bool]:
    """Read the header lines up to the blank line that ends the block: True; False when a line
    is no header (a body, or another message's Content-Length: put back to be read again);
    None at the end of input."""
    while True:
        line = await stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            return True
        if MARK in line.lower() or not _is_header(line):
            stream.put_back(line)
            return False


def _is_header(line: bytes) -> bool:
    """`Name: value` ending the line (`Content-Type: ...`).  No regular expression: a name
    pattern searched along a long run of letters would retry at every one of them."""
    name, colon, value = line.partition(b":")
    return (bool(colon) and bool(name) and _NAME_BYTES.issuperset(name) and line.endswith(b"\n")
            and b"\n" not in value[:-1] and b"\r" not in value.rstrip(b"\r\n"))


async def _drop(stream: _Stream, size: int) -> None:
    while size > 0:
        data = await stream.read(min(size, _CHUNK))
        if not data:
            return
        size -= len(data)


_TOO_DEEP = object()


def _one_json_value(body: bytes):
    """True when the body is one JSON value nested at most MAX_NESTING deep, _TOO_DEEP when
    it is nested deeper, None when it is no JSON value."""
    try:
        value = json.loads(body)
    except RecursionError:
        return _TOO_DEEP
    except ValueError:
        return None
    return True if _depth_at_most(value, MAX_NESTING) else _TOO_DEEP


def _depth_at_most(value, limit: int) -> bool:
    """Whether arrays and objects nest at most `limit` deep in a decoded value: a walk with a
    list for a stack (no recursion), stopping at the first level past the limit."""
    level = [value]
    for _ in range(limit):  # after k rounds: the values inside k arrays or objects
        level = [inner for outer in level if isinstance(outer, (list, dict))
                 for inner in (outer.values() if isinstance(outer, dict) else outer)]
        if not level:
            return True
    return not any(isinstance(inner, (list, dict)) for inner in level)


def _after_json_value(body: bytes) -> Optional[bytes]:
    """The bytes after a complete JSON value at the start of `body`, or None when it holds none."""
    try:
        text = body.decode("utf-8")
        start = len(text) - len(text.lstrip())
        _, end = json.JSONDecoder().raw_decode(text, start)
    except (ValueError, RecursionError):
        return None
    return text[end:].encode("utf-8")


async def run_async(stop_event, reader, protocol, logger: Optional[logging.Logger] = None, error_handler=None, **_: Any):
    """pygls.io_.run_async's contract with a reader that survives malformed input (see the module
    docstring), and a TCP client that goes away mid-message ends the session as the end of
    input does."""
    log = logger or logging.getLogger(__name__)
    stream = _Stream(reader)

    def skipped(why: str) -> None:
        message = f"gradlint: skipped {why} in the client's input; reading on from the next message"
        log.warning(message)
        _tell_the_client(protocol, message)

    try:
        while not stop_event.is_set():
            body = await next_body(stream, skipped)
            if body is None:
                break
            try:
                message = json.loads(body, object_hook=protocol.structure_message)
                protocol.handle_message(message)
            except Exception as exc:  # as pygls does: the message is dropped, the session goes on
                log.exception("Unable to handle message")
                if error_handler is not None:
                    from pygls.exceptions import JsonRpcException

                    error_handler(exc, JsonRpcException)
    except (ConnectionError, asyncio.IncompleteReadError):
        log.info("the client disconnected")


def _tell_the_client(protocol, message: str) -> None:
    server = getattr(protocol, "_server", None)
    say = getattr(server, "log", None)
    if say is None:
        return
    try:
        from lsprotocol import types

        say(message, types.MessageType.Warning)
    except Exception:  # no writer yet, or a closed one: the stderr log has it
        pass
