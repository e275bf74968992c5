"""`kill_engine.py SIGNAL [workers]`: send SIGNAL to the vLLM server, as a crash or the OOM
killer would (or, with `workers`, to its engine-core and worker processes, as a wedged kernel
would stop them), and print the pids. The server is the front's child: vLLM renames its
processes, so it is found by its parent, `python -m serving serve`, and not by name."""

import os
import sys


def read(pid: str, name: str) -> bytes:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as file:
            return file.read()
    except OSError:
        return b""


def parent_of(stat: bytes) -> str:
    # /proc/PID/stat is "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
    return stat[stat.rindex(b")") + 2 :].split()[1].decode()


def kill_engines(sig: int, workers: bool = False) -> None:
    pids = [pid for pid in os.listdir("/proc") if pid.isdigit()]
    parents = {pid: parent_of(stat) for pid in pids if (stat := read(pid, "stat"))}
    fronts = {pid for pid in pids if b"-m\0serving\0serve" in read(pid, "cmdline")}
    engines = {
        pid
        for pid, parent in parents.items()
        if parent in fronts and b"vllm" in read(pid, "cmdline")
    }
    targets = engines
    if workers:
        targets, level = set(), engines
        while level:
            level = {pid for pid, parent in parents.items() if parent in level}
            targets |= level
    for pid in sorted(targets):
        os.kill(int(pid), sig)
        print(pid)


if __name__ == "__main__":
    kill_engines(int(sys.argv[1]), workers=sys.argv[2:] == ["workers"])
