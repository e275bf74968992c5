"""This machine's pip settings, made fit for an image build: pip.conf and the CA bundle it
names go to the build as BuildKit secrets (read by the install steps, never stored in a
layer), and local wheel folders and file:// indexes are served over loopback HTTP for the
build's duration (builds run on the host network). On a machine without pip settings there
is nothing to pass, and the build uses PyPI and PyTorch's index as a user's would."""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

# Where the build's install steps mount the secrets (docker/cpu-base/Dockerfile).
CA_SECRET_TARGET = "/run/secrets/ca.pem"
LOOPBACK = "127.0.0.1"
# pip's own precedence: environment over site over user over global files.
SCOPE_RANK = {"global": 0, "user": 1, "site": 2, ":env:": 3}
LOCATION_KEYS = ("index-url", "extra-index-url", "find-links")
PASSED_KEYS = ("timeout", "default-timeout", "retries", "proxy", "trusted-host")


def read_settings(python: str = sys.executable) -> dict[str, str]:
    """`pip config list` of `python`, one value per key, by pip's precedence."""
    result = subprocess.run(
        [python, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60
    )
    ranked: dict[str, tuple[int, str]] = {}
    for line in result.stdout.splitlines():
        name, _, quoted = line.partition("=")
        scope, _, key = name.rpartition(".")
        if not key or len(quoted) < 2:
            continue
        rank = SCOPE_RANK.get(scope, 0)
        if key not in ranked or rank >= ranked[key][0]:
            ranked[key] = (rank, quoted[1:-1])
    return {key: value for key, (_, value) in ranked.items()}


def local_folder(location: str) -> Path | None:
    """The folder a pip location names when it is on this disk, else None."""
    parsed = urlparse(location)
    if parsed.scheme in ("http", "https"):
        return None
    path = Path(unquote(parsed.path) if parsed.scheme == "file" else location)
    return path if path.is_dir() else None


@dataclass
class BuildSettings:
    """pip.conf for the build, the CA bundle it refers to, and the folders to serve."""

    pip_conf: str
    ca_bundle: Path | None = None
    folders: list[Path] = field(default_factory=list)


def for_build(settings: dict[str, str], base_url: str, local_folders: bool = True) -> BuildSettings:
    """Translate `settings`; local folders become `base_url/<n>/` in the order of `folders`,
    or are left out (`local_folders` False: a build that must take what the index has)."""
    folders: list[Path] = []
    lines = ["[global]"]
    for key in LOCATION_KEYS:
        locations = []
        for location in settings.get(key, "").split():
            folder = local_folder(location)
            if folder is None and urlparse(location).scheme in ("http", "https"):
                locations.append(location)
            elif folder is not None and local_folders:
                # An index's pages link up to its files (../../files/...): serve its parent.
                served = folder.parent if key.endswith("index-url") else folder
                if served not in folders:
                    folders.append(served)
                name = f"{folder.name}/" if key.endswith("index-url") else ""
                locations.append(f"{base_url}/{folders.index(served)}/{name}")
        if locations:
            lines.append(f"{key} = {' '.join(locations)}")
    for key in PASSED_KEYS:
        if settings.get(key):
            lines.append(f"{key} = {settings[key]}")
    ca_bundle = None
    cert = settings.get("cert")
    if cert and Path(cert).is_file():
        ca_bundle = Path(cert)
        lines.append(f"cert = {CA_SECRET_TARGET}")
    if len(lines) == 1 and ca_bundle is None:
        return BuildSettings(pip_conf="")
    return BuildSettings("\n".join(lines) + "\n", ca_bundle, folders)


class FolderHandler(http.server.SimpleHTTPRequestHandler):
    """GET /<n>/path serves folders[n]/path; directory listings are pip's find-links pages."""

    folders: list[Path] = []

    def translate_path(self, path: str) -> str:
        index, _, rest = path.lstrip("/").partition("/")
        if not index.isdigit() or int(index) >= len(self.folders):
            return "/nonexistent"
        root = self.folders[int(index)].resolve()
        target = (root / unquote(rest.split("?", 1)[0])).resolve()
        return str(target) if target.is_relative_to(root) else "/nonexistent"

    def log_message(self, format: str, *args: object) -> None:  # quiet: pip logs its own
        return None


@contextmanager
def served(settings: dict[str, str], local_folders: bool = True) -> Iterator[BuildSettings]:
    """BuildSettings whose local folders are served on loopback until the block ends."""
    handler = type("Handler", (FolderHandler,), {})
    server = http.server.ThreadingHTTPServer((LOOPBACK, 0), handler)
    base_url = f"http://{LOOPBACK}:{server.server_address[1]}"
    build = for_build(settings, base_url, local_folders)
    handler.folders = build.folders
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    if build.folders:
        thread.start()
    try:
        yield build
    finally:
        if build.folders:
            server.shutdown()
        server.server_close()
