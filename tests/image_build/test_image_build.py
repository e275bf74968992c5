"""image_build's parts that need no engine: pip settings made fit for a build, the loopback
wheel server, apt's mirror. The build itself is `make image-test`'s."""

from __future__ import annotations

from pathlib import Path

import httpx

from harness.docker import container_settings
from image_build.base_images import DEFAULT_MIRROR, debian_mirror
from image_build.pip_settings import CA_SECRET_TARGET, for_build, served


def test_a_machine_without_pip_settings_passes_nothing():
    build = for_build({}, "http://127.0.0.1:1")
    assert (build.pip_conf, build.ca_bundle, build.folders) == ("", None, [])


def test_local_folders_become_loopback_urls_and_remote_ones_stay(tmp_path: Path):
    wheels, index = tmp_path / "wheels", tmp_path / "mirror" / "simple"
    wheels.mkdir()
    index.mkdir(parents=True)
    ca = tmp_path / "ca.pem"
    ca.write_text("certificate")
    settings = {
        "find-links": f"{wheels} https://example.com/wheels /nonexistent",
        "extra-index-url": f"file://{index}",
        "cert": str(ca),
        "constraint": "/etc/constraints.txt",
        "timeout": "60",
    }
    build = for_build(settings, "http://127.0.0.1:9")
    # An index's pages link up to its files, so its parent is served.
    assert "extra-index-url = http://127.0.0.1:9/0/simple/\n" in build.pip_conf
    assert "find-links = http://127.0.0.1:9/1/ https://example.com/wheels\n" in build.pip_conf
    assert f"cert = {CA_SECRET_TARGET}\n" in build.pip_conf
    assert "timeout = 60\n" in build.pip_conf
    assert "constraint" not in build.pip_conf
    assert build.folders == [index.parent, wheels]
    assert build.ca_bundle == ca


def test_the_gpu_stand_in_takes_the_index_not_this_machines_wheels(tmp_path: Path):
    """A local torch 2.13.0+cpu outranks PyPI's CUDA torch for torch==2.13.0, so the stand-in
    base gets the remote locations and the proxy settings only."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    settings = {"find-links": f"{wheels} https://example.com/wheels", "proxy": "http://proxy:3128"}
    build = for_build(settings, "http://127.0.0.1:9", local_folders=False)
    assert "find-links = https://example.com/wheels\n" in build.pip_conf
    assert "proxy = http://proxy:3128\n" in build.pip_conf
    assert build.folders == []


def test_the_wheel_server_serves_its_folders_and_nothing_else(tmp_path: Path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "demo-1.0-py3-none-any.whl").write_bytes(b"wheel")
    (tmp_path / "secret.txt").write_text("not for the build")
    with served({"find-links": str(wheels)}) as build:
        base = build.pip_conf.split("find-links = ")[1].split()[0]
        listing = httpx.get(base)
        assert "demo-1.0-py3-none-any.whl" in listing.text
        assert httpx.get(base + "demo-1.0-py3-none-any.whl").content == b"wheel"
        for escape in ("../secret.txt", "..%2fsecret.txt", "%2e%2e/secret.txt"):
            assert httpx.get(base + escape).status_code == 404
        assert httpx.get(base.replace("/0/", "/7/")).status_code == 404


def test_the_debian_mirror_comes_from_apts_sources(tmp_path: Path):
    sources = tmp_path / "debian.sources"
    sources.write_text(
        "Types: deb\nURIs: http://mirror.example/debian-security\n\n"
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\n"
    )
    assert debian_mirror([sources]) == "http://mirror.example/debian"
    legacy = tmp_path / "sources.list"
    legacy.write_text("deb [arch=amd64] http://old.example/debian bookworm main\n")
    assert debian_mirror([legacy]) == "http://old.example/debian"
    assert debian_mirror([tmp_path / "none"]) == DEFAULT_MIRROR


def test_a_container_gets_what_the_caller_set_not_the_runners_shell(monkeypatch):
    monkeypatch.setenv("HOME", "/root")
    env = {"HOME": "/root", "PYTHON": "/venv/python", "OPT_ML_ROOT": "/demo", "SM_X": "1"}
    assert container_settings(env) == {"SM_X": "1"}


def test_the_image_sees_the_demo_tree_at_opt_ml_read_only(tmp_path: Path):
    from harness.docker import DockerContainer

    (tmp_path / "model").mkdir()
    for channel in ("eagle", "eagle3"):
        (tmp_path / "additional-model-data-sources" / channel).mkdir(parents=True)
    config = f'{{"model": "{tmp_path}/additional-model-data-sources/eagle"}}'
    container = DockerContainer(
        "demo", {"SM_VLLM_SPECULATIVE_CONFIG": config}, "image:tag", "docker", tmp_path, port=9
    )
    argv = container.run_argv()
    assert f"{tmp_path}/model:/opt/ml/model:ro" in argv
    eagle3 = f"{tmp_path}/additional-model-data-sources/eagle3"
    assert f"{eagle3}:/opt/ml/additional-model-data-sources/eagle3:ro" in argv
    assert (
        'SM_VLLM_SPECULATIVE_CONFIG={"model": "/opt/ml/additional-model-data-sources/eagle"}'
        in argv
    )
    assert "SAGEMAKER_BIND_TO_PORT=9" in argv
    assert argv[-2:] == ["image:tag", "serve"]
