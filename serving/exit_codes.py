"""The container's exit codes: what a non-zero exit tells an operator, in one place."""

from __future__ import annotations

# The environment or the model data sources are wrong; nothing was loaded. Fix and restart.
BAD_CONFIG = 2
# The engine (vLLM) could not start, or stopped while serving; its log says why.
ENGINE_DIED = 3
# The front could not start serving (its port is taken, say); the engine was stopped.
FRONT_FAILED = 4
