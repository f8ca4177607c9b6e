from evalkit import environment


def test_the_record_carries_versions_machine_and_a_calibration_completed_at_the_end():
    env = environment.environment()
    assert env["sqlite"] and env["packages"]["numpy"] and env["machine"]["cpus"]
    cal = env["calibration"]
    assert cal["cpu_model"] and cal["start"]["reference_ms"] > 0 and "end" not in cal
    done = environment.completed(env)
    assert done["calibration"]["end"]["load_average"] and done["calibration"]["start"] == cal["start"]
    assert {k: v for k, v in done.items() if k != "calibration"} == {k: v for k, v in env.items() if k != "calibration"}


def test_a_record_from_before_calibration_is_left_as_it_is():
    old = {"python": "3.11.7", "machine": {"cpus": 2}}
    assert environment.completed(old) == old
