"""The JSON-RPC layer under the handlers: the one place where every frame is decoded, so
that every request gets exactly one answer.

pygls decodes a frame inside its read loop and, when decoding fails, logs the frame and
drops it: a request whose params do not fit their LSP type (a position of ``-1``), a
custom request without ``params`` (legal JSON-RPC), one nested deeper than Python's parser
goes, and any request after ``shutdown`` were never answered, and the client waited for
ever. Here each frame is decoded as plain JSON first and then checked member by member:

* not JSON → ParseError (-32700), with the request's id when a shallow scan finds one,
  else ``null`` (JSON-RPC);
* nested too deeply to decode → InvalidRequest (-32600), with the id the shallow scan
  finds (the scan does not recurse);
* not a JSON-RPC 2.0 message (no object, ``jsonrpc`` other than ``"2.0"``, a method that
  is not a string, an id that is neither a number nor a string) → InvalidRequest;
* params that do not fit the method's LSP type → InvalidParams (-32602) naming
  ``data.field`` (``position.line``); a custom request without ``params`` gets ``{}``;
* a second ``initialize`` → InvalidRequest, and nothing changes (LSP: initialize is sent once);
* a request before ``initialize`` → ServerNotInitialized (-32002, LSP); notifications before
  it other than ``exit`` are dropped;
* a request after ``shutdown`` → InvalidRequest (LSP); notifications other than ``exit``
  are ignored.

Members outside the JSON-RPC envelope (``jsonrpc``, ``id``, ``method``, ``params``,
``result``, ``error``) are ignored. Log lines never carry a payload, only its size.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import attrs
from cattrs.errors import BaseValidationError
from cattrs.v import format_exception, transform_error
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
SERVER_NOT_INITIALIZED = -32002  # LSP

_REQUEST = ("jsonrpc", "id", "method", "params")
_RESPONSE = ("jsonrpc", "id", "result", "error")
_RANGE = re.compile(r"^\w+\.(\w+) should be in range \[(-?\d+):(-?\d+)\]")
_CAMEL = re.compile(r"_([a-z])")
MESSAGE_MAX = 300  # characters of a value quoted in an error message


def _valid_id(v: Any) -> bool:
    return isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))


def _size(body: bytes | None) -> str:
    return f"{len(body):,} bytes" if body is not None else "?"


# ---- reading the envelope of a frame that cannot be decoded --------------------------------

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_WS = re.compile(r"[ \t\r\n]*")


def shallow_envelope(body: bytes) -> dict[str, Any]:
    """The scalar top-level members of a JSON object, read without recursion: nested
    values are skipped by counting brackets outside strings. Used to answer a frame that
    ``json`` cannot decode (too deep, or broken after its id) by its id. Reads what it
    can and returns it; never raises."""
    out: dict[str, Any] = {}
    try:
        text = body.decode("utf-8", "replace")
        dec = json.JSONDecoder()
        i = _WS.match(text, 0).end()
        if text[i:i + 1] != "{":
            return out
        i += 1
        while True:
            i = _WS.match(text, i).end()
            if text[i:i + 1] != '"':
                return out
            key, i = dec.raw_decode(text, i)
            i = _WS.match(text, i).end()
            if text[i:i + 1] != ":":
                return out
            i = _WS.match(text, i + 1).end()
            if text[i:i + 1] in ("[", "{"):
                depth = 0
                for m in _TOKEN.finditer(text, i):
                    t = m.group(0)
                    if t in ("[", "{"):
                        depth += 1
                    elif t in ("]", "}"):
                        depth -= 1
                    if depth == 0:
                        i = m.end()
                        break
                else:
                    return out
            else:
                value, i = dec.raw_decode(text, i)
                out.setdefault(key, value)
            i = _WS.match(text, i).end()
            if text[i:i + 1] != ",":
                return out
            i += 1
    except (ValueError, IndexError, RecursionError):
        return out


# ---- params that do not fit their LSP type -------------------------------------------------


def _camel(path: str) -> str:
    return _CAMEL.sub(lambda m: m.group(1).upper(), path)


def invalid_field(exc: BaseException) -> tuple[str, str]:
    """(field, message) for a structuring error: the first failing field as the client
    spells it (``position.line``, ``textDocument.uri``), and a short reason."""

    def fmt(e: BaseException, typ: Any) -> str:
        if isinstance(e, ValueError) and (m := _RANGE.match(str(e)[:MESSAGE_MAX])):
            return f"#{m.group(1)}#must be an integer from {m.group(2)} to {m.group(3)}"
        return format_exception(e, typ)[:MESSAGE_MAX]

    try:
        msgs = transform_error(exc, path="$", format_exception=fmt) if isinstance(exc, BaseValidationError) else []
    except Exception:  # noqa: BLE001 - describing the error failed: name the params as a whole
        msgs = []
    if not msgs:
        return "params", "invalid params"
    reason, _, path = msgs[0].rpartition(" @ ")
    if reason.startswith("#"):
        attr, _, reason = reason[1:].partition("#")
        path = f"{path}.{attr}"
    field = _camel(path.removeprefix("$.params").lstrip(".")) or "params"
    if path == "$" or not path.startswith("$.params"):
        field = "params"
    return field, f"{field}: {reason}"


# ---- the protocol ----------------------------------------------------------------------


class CodeSynapseProtocol(LanguageServerProtocol):
    """LanguageServerProtocol whose frames are decoded and checked here (see the module
    docstring); dispatch, handlers and responses stay pygls'."""

    def __init__(self, server: Any, converter: Any):
        super().__init__(server, converter)
        self._initialize_seen = False

    # -- answers ---------------------------------------------------------------------------
    def send_error(self, msg_id: Any, code: int, message: str, data: Any = None) -> None:
        """A JSON-RPC error response written as a plain object, so that an unknown id is
        sent as ``null`` (a structured ResponseErrorMessage would leave it out)."""
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._send_data({"jsonrpc": "2.0", "id": msg_id if _valid_id(msg_id) else None, "error": error})

    def _send_handler_result(self, future: Any, *, msg_id: Any) -> None:
        # an InvalidParams / RequestFailed answer is the client's error, not the server's:
        # no traceback in the log for it (pygls logs one per bad request)
        if not future.cancelled() and isinstance(exc := future.exception(), JsonRpcException):
            self._request_futures.pop(msg_id, None)
            log.debug("request %r answered with error %s", msg_id, exc.code)
            self._send_response(msg_id, error=exc.to_response_error())
            return
        super()._send_handler_result(future, msg_id=msg_id)

    # -- decoding ----------------------------------------------------------------------------
    def structure_message(self, data: Any) -> Any:
        """Not a json ``object_hook`` here: frames are decoded as plain JSON and
        structured in ``handle_message``, once, at the top level."""
        return data

    def handle_frame(self, body: bytes) -> None:
        """Decode one frame's body and dispatch it; a frame that cannot be decoded is
        answered by the id a shallow scan finds (``null`` when none)."""
        try:
            data = json.loads(body)
        except RecursionError:
            env = shallow_envelope(body)
            log.warning("a message nested too deeply to decode (%s), id %.80r", _size(body), env.get("id"))
            self.send_error(env.get("id"), INVALID_REQUEST,
                            "the message is nested more deeply than the server can decode")
            return
        except ValueError as e:  # not JSON, not UTF-8
            env = shallow_envelope(body)
            log.warning("a message that is not JSON (%s): %.200s", _size(body), e)
            self.send_error(env.get("id"), PARSE_ERROR, "parse error: the message is not valid JSON")
            return
        self.handle_message(data, body)

    def handle_message(self, message: Any, body: bytes | None = None) -> None:
        if not isinstance(message, dict):
            if hasattr(message, "jsonrpc"):  # already structured (not from the wire)
                super().handle_message(message)
                return
            log.warning("a message that is not a JSON object (%s)", _size(body))
            self.send_error(None, INVALID_REQUEST, "invalid request: a message must be a JSON object "
                                                   "(batches are not supported)")
            return
        if "method" not in message:  # a response to a request of ours
            self._handle_client_response({k: message[k] for k in _RESPONSE if k in message}, body)
            return
        data = {k: message[k] for k in _REQUEST if k in message}
        has_id = "id" in data
        msg_id = data.get("id")
        method = data.get("method")
        if data.get("jsonrpc") != "2.0" or not isinstance(method, str) or (has_id and not _valid_id(msg_id)):
            log.warning("not a JSON-RPC 2.0 message (%s), method %.80r, id %.80r", _size(body), method, msg_id)
            if has_id:
                self.send_error(msg_id, INVALID_REQUEST,
                                "invalid request: expected a JSON-RPC 2.0 message with a string method "
                                "and a number or string id")
            return

        if self._shutdown and method != types.EXIT:
            if has_id:
                self.send_error(msg_id, INVALID_REQUEST,
                                f"invalid request: the server is shutting down; {method[:80]!r} is refused "
                                f"after shutdown (only the exit notification is accepted)")
            return
        initialize = method == types.INITIALIZE and has_id
        if initialize and self._initialize_seen:
            self.send_error(msg_id, INVALID_REQUEST,
                            "invalid request: the server is already initialized (initialize may be sent "
                            "only once per connection)")
            return
        if not initialize and not self._initialize_seen and method != types.EXIT:
            if has_id:
                self.send_error(msg_id, SERVER_NOT_INITIALIZED,
                                f"the server is not initialized: send the initialize request before "
                                f"{method[:80]!r}")
            return

        typ = self.get_message_type(method)
        if typ is None:
            typ = JsonRPCRequestMessage if has_id else JsonRPCNotification
            if data.get("params") is None:  # params may be omitted (JSON-RPC): no fields given
                data["params"] = {}
        elif has_id and "id" not in attrs.fields_dict(typ):
            log.warning("notification %.80r sent with an id", method)
            self.send_error(msg_id, INVALID_REQUEST, f"invalid request: {method!r} is a notification; "
                                                     f"send it without an id")
            return
        try:
            structured = self._converter.structure(data, typ)
        except Exception as e:  # noqa: BLE001 - whatever the converter raises, the params do not fit
            field, reason = invalid_field(e)
            log.warning("%s: params do not fit (%s): %.300s", method[:80], _size(body), reason)
            if has_id:
                self.send_error(msg_id, INVALID_PARAMS, reason, {"field": field})
            return
        if initialize:  # from here on, initialize has been received (its params fit)
            self._initialize_seen = True
        super().handle_message(structured)

    def _handle_client_response(self, data: dict[str, Any], body: bytes | None) -> None:
        if data.get("jsonrpc") != "2.0" or not _valid_id(data.get("id")):
            log.warning("a message that is neither a request nor a response (%s)", _size(body))
            return
        try:
            msg = super().structure_message(data)
        except Exception:  # noqa: BLE001 - a reply we cannot read is dropped, logged
            log.warning("a response that does not fit its type (%s), id %.80r", _size(body), data.get("id"))
            return
        super().handle_message(msg)


# ---- the read loop -------------------------------------------------------------------------

_CONTENT_LENGTH = re.compile(rb"^Content-Length: (\d+)\r\n$")


async def read_frames(stop_event: Any, reader: Any, protocol: CodeSynapseProtocol) -> None:
    """pygls' stdio read loop (``pygls.io_.run_async``), with every body handed to
    ``protocol.handle_frame`` so that a body that cannot be decoded is still answered."""
    content_length = 0
    while not stop_event.is_set():
        header = await reader.readline()
        if not header:
            break
        if not content_length:
            m = _CONTENT_LENGTH.fullmatch(header)
            if m:
                content_length = int(m.group(1))
        if content_length and not header.strip():
            body = await reader.readexactly(content_length)
            content_length = 0
            if not body:
                break
            try:
                protocol.handle_frame(body)
            except Exception:
                log.exception("unable to handle a message (%s)", _size(body))
