"""An S3 API server (moto, in its own process) for the session, emptied before each test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.s3 import MotoServer

BUCKET = "exports"


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    with MotoServer() as server:
        saved = {name: os.environ.get(name) for name in server.env()}
        os.environ.update(server.env())
        try:
            yield server
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


@pytest.fixture
def s3(moto_server: MotoServer) -> Iterator[Any]:
    """A boto3 client of the emptied server, with the bucket ``exports`` created."""
    moto_server.reset()
    client = moto_server.client()
    client.create_bucket(Bucket=BUCKET)
    yield client
    client.close()
