"""The metrics script through the real prometheus-redis-exporter, and the alert rules."""

from __future__ import annotations

import re
import subprocess
import time

from conftest import OPS, need

METRIC = re.compile(r'^redis_script_values\{key="([^"]+)"\} (\S+)$', re.M)


def script_values(text: str) -> dict:
    return {key: float(value) for key, value in METRIC.findall(text)}


def info_numbers(client) -> dict:
    info = client.execute_command("INFO", "rlock")
    return {key: float(value) for key, value in info.items() if isinstance(value, (int, float))}


def test_every_info_field_becomes_a_metric_with_its_value(server, exporter):
    admin = server.client()
    # Known activity: a hold, a re-entry, a contended wait that times out, a handoff.
    assert admin.execute_command("RLOCK.ACQUIRE", "a", "o1", "PX", 60000)
    assert admin.execute_command("RLOCK.ACQUIRE", "a", "o1", "PX", 60000)
    assert admin.execute_command("RLOCK.ACQUIRE", "a", "o2", "PX", 60000, "WAIT", 10) is None
    assert admin.execute_command("RLOCK.ACQUIRE", "b", "o3", "PX", 60000)
    assert admin.execute_command("RLOCK.RELEASE", "b", "o3") == 0

    metrics = script_values(exporter.scrape())
    info = info_numbers(admin)
    expected = dict(info)
    assert expected, "INFO rlock shows no numbers"
    assert {key: metrics.get(key) for key in expected} == expected
    assert len(expected) >= 25
    assert expected["rlock_acquisitions"] == 2
    assert expected["rlock_reentries"] == 1
    assert expected["rlock_wait_timeouts"] == 1
    version = admin.execute_command("INFO", "rlock")["rlock_version"]
    major, minor, patch = (int(part) for part in str(version).split("."))
    assert metrics["rlock_version_number"] == major * 10000 + minor * 100 + patch


def test_the_longest_holding_is_measured(server, exporter):
    admin = server.client()
    assert admin.execute_command("RLOCK.ACQUIRE", "old", "o1", "PX", 60000)
    started = time.monotonic()
    time.sleep(0.3)
    assert admin.execute_command("RLOCK.ACQUIRE", "new", "o2", "PX", 60000)
    admin.set("not-a-lock", "x")
    metrics = script_values(exporter.scrape())
    elapsed_ms = (time.monotonic() - started) * 1000
    assert 300 <= metrics["rlock_longest_held_ms"] <= elapsed_ms + 50
    assert metrics["rlock_scanned_locks"] == 2
    assert metrics["rlock_scan_complete"] == 1


def test_the_scan_stays_within_its_bound(server, exporter):
    """More keys than the script may look at in one scrape: it says the scan is incomplete."""
    admin = server.client()
    pipe = admin.pipeline(transaction=False)
    for n in range(12000):
        pipe.set(f"filler:{n}", n)
    pipe.execute()
    assert admin.execute_command("RLOCK.ACQUIRE", "a", "o1", "PX", 60000)
    metrics = script_values(exporter.scrape())
    assert metrics["rlock_scan_complete"] == 0
    assert metrics["rlock_scanned_locks"] <= 1


def test_the_alert_rules_are_valid_and_their_unit_tests_pass():
    promtool = need("promtool", "prometheus")
    for command in (["check", "rules", "rlock-alerts.yml"], ["test", "rules", "rlock-alerts.test.yml"]):
        run = subprocess.run([promtool, *command], cwd=OPS, capture_output=True, text=True)
        assert run.returncode == 0, run.stdout + run.stderr
