"""moto's S3 server in its own process on a free loopback port, and what a test reads back from it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

import httpx

REGION = "us-east-1"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": REGION}
CONN_ID = "moto_s3"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class MotoServer:
    """``python -m moto.server`` on loopback; stopped by its pid (SIGTERM, then SIGKILL)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> MotoServer:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{self.url}/moto-api/", timeout=2).raise_for_status()
                return self
            except httpx.HTTPError:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise RuntimeError("moto's S3 server did not start") from None
                time.sleep(0.1)

    def __exit__(self, *exc_info: object) -> None:
        if self._process is None:
            return
        os.kill(self._process.pid, signal.SIGTERM)
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(self._process.pid, signal.SIGKILL)
            self._process.wait(10)
        self._process = None

    def env(self) -> dict[str, str]:
        """What a process needs for both forms: bare ``s3://bucket`` (botocore's environment) and
        ``s3://moto_s3@bucket`` (an Airflow ``aws`` connection pointing at this server)."""
        connection = {
            "conn_type": "aws",
            "login": CREDENTIALS["AWS_ACCESS_KEY_ID"],
            "password": CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            "extra": {"endpoint_url": self.url, "region_name": REGION},
        }
        return {
            **CREDENTIALS,
            "AWS_ENDPOINT_URL_S3": self.url,
            f"AIRFLOW_CONN_{CONN_ID.upper()}": json.dumps(connection),
        }

    def reset(self) -> None:
        httpx.post(f"{self.url}/moto-api/reset", timeout=10).raise_for_status()

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.url,
            region_name=REGION,
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )


def objects(client: Any, bucket: str) -> dict[str, int]:
    """Every visible object in ``bucket``: key -> size."""
    listed = client.list_objects_v2(Bucket=bucket).get("Contents", [])
    return {entry["Key"]: entry["Size"] for entry in listed}


def open_uploads(client: Any, bucket: str) -> list[str]:
    """Keys of the multipart uploads started in ``bucket`` and neither completed nor aborted."""
    return [upload["Key"] for upload in client.list_multipart_uploads(Bucket=bucket).get("Uploads", [])]
