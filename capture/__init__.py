"""Captured traffic in, a training set for a speculative-decoding drafter head out.

`python -m capture export` reads the container's own capture files and SageMaker Data Capture
files, and writes the conversations (each request's messages plus the answer the target gave)
in the OpenAI chat format and in ShareGPT. A laptop tool: the image does not ship it.
"""
