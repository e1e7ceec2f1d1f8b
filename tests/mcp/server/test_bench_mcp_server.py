"""scripts/bench_mcp_server.py runs and compares the servers it finds (issue 28 point 8): structure, not timing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_server_benchmark_prints_a_row_per_server_with_ratios_to_yiemagent() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_mcp_server.py"), "--calls", "20",
                           "--rounds", "1", "--threads", "2"], capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()
            if line.split() and line.split()[0] in ("yiemagent", "yiemagent-stateless", "sdk", "fastmcp")}
    assert set(rows) == {"yiemagent", "yiemagent-stateless", "sdk", "fastmcp"}
    assert rows["yiemagent"][4] == "1.00" and rows["yiemagent"][6] == "1.00"  # the ratios are to yiemagent
    assert all(float(row[1]) > 0 and float(row[5]) > 0 for row in rows.values())
