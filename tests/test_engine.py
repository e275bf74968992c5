"""The engine child: its command line, and where it listens."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import psutil

from serving.engine import build_argv
from serving.settings import load_settings


def settings_for(tmp_path: Path, **env: str):
    (tmp_path / "model").mkdir(exist_ok=True)
    (tmp_path / "model" / "config.json").write_text("{}")
    return load_settings({"OPT_ML_ROOT": str(tmp_path), **env})


def test_engine_listens_on_loopback_only(peagle):
    port = peagle.engine_port()
    listening = [c for c in psutil.net_connections("inet") if c.status == psutil.CONN_LISTEN]
    http_sockets = [c for c in listening if c.laddr.port == port]
    assert http_sockets, f"nothing listens on the engine's port {port}"
    for sock in http_sockets:
        assert ipaddress.ip_address(sock.laddr.ip).is_loopback, sock
    # vLLM's workers open ports of their own; none may face the network either.
    engine_tree = {peagle.engine_process().pid} | {
        child.pid for child in peagle.engine_process().children(recursive=True)
    }
    for sock in listening:
        if sock.pid in engine_tree:
            assert ipaddress.ip_address(sock.laddr.ip).is_loopback, sock


def test_trust_remote_code_only_when_asked(tmp_path: Path):
    assert "--trust-remote-code" not in build_argv(settings_for(tmp_path))
    asked = build_argv(settings_for(tmp_path, SM_VLLM_TRUST_REMOTE_CODE="true"))
    assert "--trust-remote-code" in asked


def test_user_flags_come_last_so_they_win(tmp_path: Path):
    argv = build_argv(settings_for(tmp_path, SM_VLLM_MAX_MODEL_LEN="1024", SM_NUM_GPUS="2"))
    assert argv[-2:] == ["--max-model-len", "1024"]
    assert argv[argv.index("--tensor-parallel-size") + 1] == "2"
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
