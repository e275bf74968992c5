"""The head's lifecycle rehearsed: retrain, train-head and rollout (`python -m rehearsals`)."""
