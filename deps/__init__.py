"""The locked dependency set: every package the host venv and the images install, at one
version with its sha256 (host.lock, engine.lock, training.lock), written on purpose by
`python -m deps refresh` (make lock) and installed with pip's --require-hashes."""
