"""`kill_engine.py SIGNAL`: send SIGNAL to the vLLM server, as a crash or the OOM killer
would, and print its pid. It is the front's child: vLLM renames its processes, so it is found
by its parent, `python -m serving serve`, and not by name."""

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


def kill_engines(sig: int) -> None:
    pids = [pid for pid in os.listdir("/proc") if pid.isdigit()]
    fronts = {pid for pid in pids if b"-m\0serving\0serve" in read(pid, "cmdline")}
    for pid in pids:
        stat = read(pid, "stat")
        if stat and parent_of(stat) in fronts and b"vllm" in read(pid, "cmdline"):
            os.kill(int(pid), sig)
            print(pid)


if __name__ == "__main__":
    kill_engines(int(sys.argv[1]))
