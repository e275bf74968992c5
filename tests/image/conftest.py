"""What the image tests share: the image under test (--image)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def image(request: pytest.FixtureRequest) -> str:
    return request.config.getoption("--image")
