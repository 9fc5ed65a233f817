"""`make lab` for the tests: started headless on 127.0.0.1 (free port, fixed token), awaited, then stopped."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_lab(
    *, token: str, env: dict[str, str], extra_args: str = "", log: IO[str] | None = None, timeout: float = 120.0
) -> Iterator[str]:
    """Run `make lab` from this venv until the block ends; yields the base URL once ``/api/status`` answers.

    ``log`` receives the server's output (discarded by default). The server runs in its own process group, so
    stopping it stops make and the JupyterLab it started.
    """
    port = free_port()
    lab_args = (
        f"--no-browser --ip=127.0.0.1 --port={port} --ServerApp.port_retries=0 --IdentityProvider.token={token}"
        f" {extra_args}"
    ).strip()
    server = subprocess.Popen(
        ["make", "--no-print-directory", "-o", f"{Path(sys.prefix)}/.installed", "lab", f"LAB_ARGS={lab_args}",
         f"VENV={Path(sys.prefix)}"],
        cwd=ROOT, env=env, stdout=log or subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"JupyterLab did not answer on {base} within {timeout:.0f} s (make exit code {server.poll()})"
                    ) from None
                time.sleep(0.5)
        yield base
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
