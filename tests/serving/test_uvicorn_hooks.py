"""The four places the front overrides uvicorn's internals, checked against the installed
uvicorn, so an upgrade that changes one fails here by name instead of in production.

- serving/http_wire.py replaces `send_400_response` on uvicorn's HTTP protocols, which call it
  for a request their parser rejects (the JSON 400 for malformed HTTP).
- serving/server.py replaces `Server.handle_exit`, which `capture_signals` installs as the
  SIGTERM/SIGINT handler, and keeps out of `_captured_signals`, which uvicorn re-raises on
  exit (a drained SIGTERM would otherwise end as code 143).
- serving/server.py passes `sockets=` to `Server.run`, so the front's port is bound first.
- serving/http_wire.py extends `on_response_complete` and reads the cycle's `more_body` to
  close a refused upload's connection once it has lingered LINGER_SECONDS.

pyproject.toml pins uvicorn to the range these were read from; the images take vLLM's own
uvicorn, so the front also logs a warning at start when it runs on another version.
"""

from __future__ import annotations

import inspect
import re
import tomllib
from pathlib import Path

import uvicorn
from uvicorn.protocols.http.auto import AutoHTTPProtocol
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from serving.http_wire import FrontProtocol
from serving.server import TESTED_UVICORN, FrontServer, uvicorn_is_tested

PYPROJECT = Path(__file__).parents[2] / "pyproject.toml"


def test_the_installed_uvicorn_is_in_the_pinned_and_tested_range():
    pins = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    (pin,) = [pin for pin in pins if pin.startswith("uvicorn")]
    low, high = re.fullmatch(r"uvicorn>=([\d.]+),<([\d.]+)", pin).groups()
    assert (low, high) == TESTED_UVICORN, "pyproject's pin and the front's tested range differ"
    assert uvicorn_is_tested(uvicorn.__version__), uvicorn.__version__


def test_the_parsers_call_the_400_hook_the_front_overrides():
    for protocol in (HttpToolsProtocol, H11Protocol):
        source = inspect.getsource(protocol)
        assert "def send_400_response(self, msg: str)" in source, protocol
        assert "self.send_400_response(" in source, f"{protocol} no longer calls the hook"
    assert issubclass(FrontProtocol, AutoHTTPProtocol)
    assert FrontProtocol.send_400_response is not AutoHTTPProtocol.send_400_response


def test_signals_reach_handle_exit_and_are_re_raised_from_captured_signals():
    capture = inspect.getsource(uvicorn.Server.capture_signals)
    assert "self.handle_exit" in capture, "uvicorn no longer installs handle_exit for signals"
    assert "self._captured_signals" in capture, "uvicorn no longer re-raises captured signals"
    assert list(inspect.signature(uvicorn.Server.handle_exit).parameters) == [
        "self",
        "sig",
        "frame",
    ]
    assert FrontServer.handle_exit is not uvicorn.Server.handle_exit
    assert "sockets" in inspect.signature(uvicorn.Server.run).parameters


def test_the_protocols_have_the_response_hook_and_body_flag_the_linger_reads():
    # serving/http_wire.py lingers after a refused upload: it extends on_response_complete
    # and reads the cycle's more_body, which stays set while the client is still sending.
    for protocol in (HttpToolsProtocol, H11Protocol):
        assert "def on_response_complete(self)" in inspect.getsource(protocol), protocol
        cycle = inspect.getsource(inspect.getmodule(protocol).RequestResponseCycle)
        assert "self.more_body = True" in cycle, protocol
    assert "on_response_complete" in FrontProtocol.__dict__
