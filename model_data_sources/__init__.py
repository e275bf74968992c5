"""Build the tiny demo model data sources: a Llama target and a P-EAGLE head.

The layout written is the one SageMaker mounts under /opt/ml, so a local run only
has to point OPT_ML_ROOT at the output directory.
"""
