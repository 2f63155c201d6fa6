"""What an /identify request may touch (ROS-free): the output-directory and data-path rules, and the
request's arm read in any case and given back canonically."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from dvrk_ident_ros.errors import DvrkIdentError, PathRefusedError
from dvrk_ident_ros.identify_request import canonical_summary, plan_request, request_arm
from dvrk_ident_ros.request_paths import output_directory_within, readable_data_path


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def base(tmp_path: Path) -> Path:
    (tmp_path / "outside").mkdir()
    return tmp_path / "outside" / "lab" / "identification"  # not created: the rule must not need it


def test_empty_is_the_base_itself(base):
    assert output_directory_within(base, "") == base.resolve()
    assert output_directory_within(base, "  ") == base.resolve()
    assert output_directory_within(base, ".") == base.resolve()


def test_nested_relative_directories_are_inside(base):
    assert output_directory_within(base, "runs/2024/psm1") == base.resolve() / "runs" / "2024" / "psm1"
    assert output_directory_within(base, "a/../b") == base.resolve() / "b"  # goes up, but stays inside
    assert not base.exists(), "the rule created a directory"


@pytest.mark.parametrize("requested", ["/tmp/elsewhere", "/", "~", "~/results", str(Path.cwd())])
def test_absolute_paths_are_refused(base, requested):
    with pytest.raises(PathRefusedError, match="absolute paths are not accepted") as info:
        output_directory_within(base, requested)
    assert str(base.resolve()) in str(info.value) and "relative path inside" in str(info.value)


@pytest.mark.parametrize("requested", ["..", "../..", "../../x", "runs/../../sibling", "a/b/../../../.."])
def test_paths_leaving_the_base_are_refused(base, requested):
    with pytest.raises(PathRefusedError, match="outside it"):
        output_directory_within(base, requested)


def test_a_symlink_leaving_the_base_is_refused(base, tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    base.mkdir(parents=True)
    (base / "link").symlink_to(target, target_is_directory=True)
    (base / "inner").mkdir()
    (base / "inner_link").symlink_to(base / "inner", target_is_directory=True)
    for requested in ("link", "link/deeper", "link/.."):
        with pytest.raises(PathRefusedError, match="outside it"):
            output_directory_within(base, requested)
    assert output_directory_within(base, "inner_link/x") == base.resolve() / "inner" / "x"  # a link inside is fine
    assert list(target.iterdir()) == []


def test_a_base_behind_a_symlink_still_works(tmp_path):
    real = tmp_path / "disk" / "results"
    real.mkdir(parents=True)
    (tmp_path / "results").symlink_to(real, target_is_directory=True)
    assert output_directory_within(tmp_path / "results", "run") == real.resolve() / "run"
    with pytest.raises(PathRefusedError):
        output_directory_within(tmp_path / "results", "..")


def test_unusable_output_paths_are_refused(base):
    with pytest.raises(PathRefusedError, match="not a usable path"):
        output_directory_within(base, "a\0b")


def test_data_paths_must_be_existing_files_or_directories(tmp_path):
    csv = tmp_path / "data.csv"
    csv.write_text("1,2\n")
    bag = tmp_path / "bag"
    bag.mkdir()
    assert readable_data_path(str(csv)) == csv.resolve()
    assert readable_data_path(str(bag)) == bag.resolve()
    with pytest.raises(PathRefusedError, match="no such file or bag") as info:
        readable_data_path(str(tmp_path / "missing"))
    assert str(tmp_path / "missing") in str(info.value)
    with pytest.raises(PathRefusedError, match="not a regular file or directory"):
        readable_data_path("/dev/null")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(PathRefusedError, match="not a regular file or directory"):
        readable_data_path(str(fifo))  # would block the service for ever
    with pytest.raises(PathRefusedError, match="empty"):
        readable_data_path(" ")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_unreadable_data_is_refused(tmp_path):
    secret = tmp_path / "secret.csv"
    secret.write_text("1\n")
    secret.chmod(0)
    try:
        with pytest.raises(PathRefusedError, match="permission denied"):
            readable_data_path(str(secret))
    finally:
        secret.chmod(0o600)


def test_a_data_directory_confines_what_is_read(tmp_path):
    data = tmp_path / "recordings"
    (data / "psm1").mkdir(parents=True)
    (data / "psm1" / "run.csv").write_text("1\n")
    (tmp_path / "private.csv").write_text("1\n")
    (data / "escape").symlink_to(tmp_path / "private.csv")
    assert readable_data_path("psm1/run.csv", data) == (data / "psm1" / "run.csv").resolve()  # relative to it
    assert readable_data_path(str(data / "psm1" / "run.csv"), data) == (data / "psm1" / "run.csv").resolve()
    for given in (str(tmp_path / "private.csv"), "../private.csv", "escape"):
        with pytest.raises(PathRefusedError, match="inside the service's data_directory"):
            readable_data_path(given, data)
    assert readable_data_path(str(tmp_path / "private.csv"), "") == (tmp_path / "private.csv").resolve()


@pytest.mark.parametrize("given, canonical", [("psm1", "PSM1"), (" Psm2 ", "PSM2"), ("mtml", "MTML"),
                                              ("MTMR", "MTMR"), ("mtm", "MTM"), ("psm", "PSM")])
def test_request_arms_in_any_case(given, canonical):
    assert request_arm(given) == canonical


@pytest.mark.parametrize("given", ["suj", "psm4", "mtm1", "PSM 1"])
def test_unknown_arms_are_refused(given):
    with pytest.raises(DvrkIdentError, match="unknown arm") as info:
        request_arm(given)
    assert "PSM1" in str(info.value) and "any case" in str(info.value)


def _plan(base, data, **fields):
    request = {"arm": "psm1", "method": "ols", "data_files": [str(data)], "output_directory": "", **fields}
    return plan_request(output_base=base, **request)


def test_a_plan_names_files_with_the_canonical_arm(base, tmp_path):
    data = tmp_path / "data.csv"
    data.write_text("1\n")
    plan = _plan(base, data, method="OLS", output_directory="runs/today")
    assert (plan.arm, plan.family, plan.method) == ("PSM1", "psm", "ols")
    assert plan.output_directory == base.resolve() / "runs" / "today"
    assert plan.result_file("20250101-000000").name == "PSM1-ols-20250101-000000.json"
    assert plan.data_files == [data.resolve()]
    assert "PSM1" in plan.describe()
    gc = _plan(base, data, arm="Mtml", method="mlse")
    assert (gc.arm, gc.mtm_side, gc.result_file("s").name) == ("MTML", "MTML", "gc-MTML-s.json")
    detect = _plan(base, data, arm="", method="mlse")
    assert (detect.arm, detect.mtm_side, detect.result_file("s").name) == ("", None, "gc-MTM-s.json")
    assert not base.exists(), "planning wrote something"


@pytest.mark.parametrize("fields, message", [
    ({"arm": "suj"}, "unknown arm 'suj'"),
    ({"arm": ""}, "no arm given"),
    ({"arm": "psm1", "method": "mlse"}, "PSM1 is not an MTM"),
    ({"method": "newton"}, "unknown method"),
    ({"output_directory": "/tmp/elsewhere"}, "absolute paths are not accepted"),
    ({"output_directory": "../.."}, "outside it"),
    ({"data_files": []}, "no data_files given"),
    ({"data_files": ["/dev/zero"]}, "not a regular file or directory"),
    ({"model_file": "x.yaml"}, "model_file"),
    ({"overrides_yaml": "a: 1"}, "overrides_yaml"),
])
def test_refused_requests_name_the_rule_and_touch_nothing(base, tmp_path, fields, message):
    data = tmp_path / "data.csv"
    data.write_text("1\n")
    before = _tree(tmp_path)
    with pytest.raises(DvrkIdentError, match=message):
        _plan(base, data, **fields)
    assert _tree(tmp_path) == before


def test_summaries_name_the_arm_canonically():
    assert canonical_summary("psm ols: solver optimal; error", "PSM1") == "PSM1 ols: solver optimal; error"
    assert canonical_summary("MTML mlse with orders", "MTML") == "MTML mlse with orders"
    assert canonical_summary("psm sdp: x", "PSM") == "PSM sdp: x"
    assert canonical_summary("something else", "PSM2") == "PSM2: something else"
