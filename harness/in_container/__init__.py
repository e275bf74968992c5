"""Scripts the docker backend runs inside the container (`docker exec ... python3 -c`): the
image has Python, not procps. Each is a whole file, sent as the source of `python3 -c`, so it
imports nothing but the standard library."""
