"""`zombies.py`: print `pid name` for each process that ended and was never reaped."""

import os


def print_zombies() -> None:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as file:
                stat = file.read()
        except OSError:
            continue
        name, state = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2]
        if state == "Z":
            print(pid, name)


if __name__ == "__main__":
    print_zombies()
