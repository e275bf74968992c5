"""The P-EAGLE head trainer: a SageMaker training job that turns captured traffic into a head
for the target it was captured from, with the field's trainer (speculators). It runs in the
training image (the Dockerfile's `training` target), never in the serving image."""
