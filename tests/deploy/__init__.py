"""Tests of deploy/, against botocore Stubbers and moto, never AWS; the helpers are in
tests/support/deploy.py."""
