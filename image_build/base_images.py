"""Base images: used when present, pulled when a registry answers, and otherwise made here.
`debian:bookworm-slim` is made with debootstrap from the Debian mirror apt already uses."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from image_build.docker_daemon import EngineError, run

DEBIAN_IMAGE = "debian:bookworm-slim"
DEBIAN_SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
APT_SOURCES = [Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d")]
PULL_TIMEOUT_SECONDS = 120
# What `docker import` leaves out of a root file system and a Debian image carries.
IMPORT_CHANGES = [
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    'CMD ["bash"]',
]
MIRROR_LINE = re.compile(r"^\s*(?:URIs:\s*|deb\s+(?:\[[^\]]*\]\s+)?)(https?://\S+)", re.MULTILINE)


def present(client: str, image: str) -> bool:
    return run([client, "image", "inspect", image]).returncode == 0


def pulled(client: str, image: str) -> bool:
    try:
        return run([client, "pull", image], timeout=PULL_TIMEOUT_SECONDS).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def debian_mirror(sources: list[Path] = APT_SOURCES) -> str:
    """The first Debian (not security) mirror in apt's sources, or deb.debian.org."""
    files: list[Path] = []
    for source in sources:
        files += sorted(source.glob("*")) if source.is_dir() else [source]
    for path in files:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        for url in MIRROR_LINE.findall(text):
            if "security" not in url:
                return url
    return DEFAULT_MIRROR


def make_debian(client: str, image: str = DEBIAN_IMAGE) -> None:
    """debootstrap a minimal Debian and import it as `image`."""
    if os.geteuid() != 0:
        raise EngineError(f"{image} is not available and making it with debootstrap needs root.")
    if shutil.which("debootstrap") is None:
        result = run(["apt-get", "install", "-y", "debootstrap"])
        if result.returncode != 0:
            raise EngineError(f"installing debootstrap failed:\n{result.stderr[-2000:]}")
    with tempfile.TemporaryDirectory(prefix="debootstrap-") as root:
        argv = ["debootstrap", "--variant=minbase", DEBIAN_SUITE, root, debian_mirror()]
        result = run(argv)
        if result.returncode != 0:
            raise EngineError(f"`{' '.join(argv)}` failed:\n{result.stdout[-2000:]}")
        # Debian's images ship without apt's lists; so does this one.
        shutil.rmtree(Path(root) / "var/lib/apt/lists", ignore_errors=True)
        (Path(root) / "var/lib/apt/lists/partial").mkdir(parents=True)
        changes = [arg for change in IMPORT_CHANGES for arg in ("--change", change)]
        tar = subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(
            [client, "import", *changes, "-", image], stdin=tar.stdout, capture_output=True
        )
        tar.stdout.close()
        if tar.wait() != 0 or imported.returncode != 0:
            raise EngineError(f"importing {image} failed:\n{imported.stderr.decode()[-2000:]}")


def ensure_base_image(client: str, image: str) -> str:
    """`image` present locally: already there, pulled, or (Debian only) made here."""
    if present(client, image) or pulled(client, image):
        return image
    if image == DEBIAN_IMAGE:
        make_debian(client, image)
        return image
    raise EngineError(
        f"base image {image} is not present and could not be pulled; pull or build it first."
    )
