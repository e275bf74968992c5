"""`python -m deploy`: take a local target model and a P-EAGLE head to a SageMaker endpoint.

A laptop tool beside the image, never inside it: it imports boto3 and tqdm, never torch or
vLLM. Data flows one way through the modules: the command line (__main__) -> a validated
Plan (decide, with inputs, names, s3, sizing, preflight; the types in plan) -> the
requests it implies (requests) -> a strict check of each against botocore's model (shapes)
-> printed or sent (calls) -> waited on (waiting). upload, invoke, status and cleanup are
the other subcommands, one module each.
"""
