"""The GPU image's stages built on the stand-in base (make image-standin-test): the image
under test (--standin-image) and its training image (--standin-training-image)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def docker() -> str:
    from image_build.docker_daemon import ensure_engine

    return ensure_engine()


@pytest.fixture(scope="session")
def image(request: pytest.FixtureRequest) -> str:
    return request.config.getoption("--standin-image")


@pytest.fixture(scope="session")
def training_image(request: pytest.FixtureRequest) -> str:
    return request.config.getoption("--standin-training-image")
