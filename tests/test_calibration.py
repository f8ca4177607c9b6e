import math
import os
from datetime import datetime, timedelta, timezone

import pytest

from evalkit import calibration


def test_the_reference_workload_is_read_as_wall_and_cpu_time():
    ref = calibration.reference(repeats=3)
    assert set(ref["parts_ms"]) == {"matrix_product", "fts5_queries", "pdf_parse"}
    assert ref["reference_ms"] == pytest.approx(sum(p["wall"] for p in ref["parts_ms"].values()))
    assert ref["cpu_ms"] == pytest.approx(sum(p["cpu"] for p in ref["parts_ms"].values()))
    assert all(0 < p["cpu"] for p in ref["parts_ms"].values())
    assert ref["reference_ms"] < 2000  # a yardstick, not a benchmark: a fraction of a second per reading


def test_the_reference_runs_blas_on_one_thread(monkeypatch):
    """OpenBLAS threads a 96 x 96 product and its idle threads spin after it: counted, they doubled the CPU
    reading on an idle machine and left it to whether the other core was free."""
    from threadpoolctl import threadpool_info

    threads = []
    step, n = calibration.PARTS["matrix_product"]

    def counted(i):
        threads.extend(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")
        step(i)
    monkeypatch.setitem(calibration.PARTS, "matrix_product", (counted, 2))
    calibration.reference(repeats=1)
    assert threads and set(threads) == {1}


def test_a_run_of_a_minute_or_more_is_read_at_both_ends():
    started = calibration.start(repeats=1)
    a_minute = timedelta(seconds=calibration.REREAD_AFTER_S)
    long_ago = (datetime.now(timezone.utc) - a_minute).isoformat(timespec="seconds")
    cal = calibration.finish({**started, "start": {**started["start"], "time": long_ago}}, repeats=1)
    assert cal["cpu_model"] and cal["cores"] == os.cpu_count()
    for moment in (cal["start"], cal["end"]):
        assert moment["reference_ms"] > 0 and moment["cpu_ms"] > 0 and len(moment["load_average"]) == 3
        assert moment["cpu_jiffies"]["total"] > 0 and moment["cpu_jiffies"]["steal"] >= 0
    for kind in calibration.KINDS:
        assert cal[kind] == pytest.approx((cal["start"][kind] + cal["end"][kind]) / 2)
        assert calibration.reference_ms({"calibration": cal}, kind) == cal[kind]
    assert 0 <= cal["steal_share"] <= 1
    assert calibration.reference_ms({"calibration": cal}) == cal["reference_ms"]
    line = calibration.summary({"calibration": cal})
    assert cal["cpu_model"] in line and "at the start" in line and "at the end" in line and "CPU stolen" in line


def test_a_shorter_run_keeps_the_starts_reading_and_records_the_load_at_the_end():
    started = calibration.start(repeats=1)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")  # however long the reading took under load
    cal = calibration.finish({**started, "start": {**started["start"], "time": now}}, repeats=1)
    assert set(cal["end"]) == {"time", "load_average", "cpu_jiffies"}
    for kind in calibration.KINDS:
        assert cal[kind] == cal["start"][kind] == calibration.reference_ms({"calibration": cal}, kind)
    lasted = (datetime.fromisoformat(cal["end"]["time"]) - datetime.fromisoformat(now)).total_seconds()
    line = calibration.summary({"calibration": cal})
    assert f"not read again at the end (a run of {lasted:.0f} s)" in line and "CPU stolen" in line


def test_steal_share_is_the_stolen_part_of_the_ticks_between_two_readings():
    assert calibration.steal_share({"total": 1000, "steal": 10}, {"total": 3000, "steal": 110}) == pytest.approx(0.05)
    assert math.isnan(calibration.steal_share({"total": 5, "steal": 0}, {"total": 5, "steal": 0}))
    assert math.isnan(calibration.steal_share({}, {"total": 5, "steal": 0}))


def test_a_record_from_before_calibration_says_so():
    old = {"python": "3.11.7", "machine": {"cpus": 2}}
    assert math.isnan(calibration.reference_ms(old))
    assert calibration.summary(old).startswith("no calibration recorded")
    started = {"calibration": calibration.start(repeats=1)}  # an interrupted run: start only
    assert calibration.reference_ms(started) == started["calibration"]["start"]["reference_ms"]
    assert "at the end" not in calibration.summary(started)
