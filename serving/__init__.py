"""SageMaker-compatible serving front for vLLM with P-EAGLE speculative decoding."""
