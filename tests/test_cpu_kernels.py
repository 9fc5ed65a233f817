"""tools/cpu_kernels.py (`make test-cpus`): which kernel sets a CPU offers, what each run's environment limits, how
the runs are spread over the cores, and how their results are read."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import cpu_kernels  # noqa: E402
from cpu_kernels import (  # noqa: E402
    KERNEL_SETS,
    Outcome,
    command,
    environment,
    isa_rank,
    offered,
    parse_probe,
    parse_pytest,
    problems_of,
)

LIMITS = {"ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA"}


@pytest.mark.parametrize(("native", "sets"), [
    ("AVX512", ["default", "avx2", "avx512"]),  # an Intel server, or AMD Zen 4
    ("AVX2", ["default", "avx2"]),  # CI's AMD EPYC, most laptops
    ("DEFAULT", ["default"]),  # an x86 CPU without AVX2
    ("SVE256", ["default"]),  # ARM (Graviton): only the portable kernels can be chosen
    ("NO AVX", ["default"]),
])
def test_a_cpu_offers_the_portable_set_and_each_x86_set_up_to_its_own(native: str, sets: list[str]) -> None:
    assert offered(native) == sets


def test_this_cpu_offers_the_portable_kernels_and_its_own() -> None:
    here = offered()
    assert here[0] == "default" and here == cpu_kernels.ORDER[: len(here)]


def test_every_set_limits_all_three_libraries_together() -> None:
    for name, limits in KERNEL_SETS.items():
        assert set(limits) == LIMITS, name
        assert limits["ATEN_CPU_CAPABILITY"] == name
    assert KERNEL_SETS["default"]["MKL_ENABLE_INSTRUCTIONS"] == "SSE4_2"
    assert KERNEL_SETS["default"]["ONEDNN_MAX_CPU_ISA"] == "SSE41"
    assert KERNEL_SETS["avx512"]["ONEDNN_MAX_CPU_ISA"] == "AVX512_CORE"


def test_a_run_gets_its_set_and_one_thread_over_whatever_was_set_before() -> None:
    base = {"PATH": "/bin", "ATEN_CPU_CAPABILITY": "avx512", "OMP_NUM_THREADS": "8", "ONEDNN_MAX_CPU_ISA": "ALL"}
    env = environment("avx2", base)
    assert env["PATH"] == "/bin"
    assert {k: env[k] for k in LIMITS} == KERNEL_SETS["avx2"]
    assert env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "1"
    assert base["ATEN_CPU_CAPABILITY"] == "avx512", "the base is not changed"


INTEL_PROBE = """capability: AVX2
onednn_verbose,v1,info,oneDNN v3.7.1 (commit 8d263e693366ef8db40acc569cc7d8edf644556d)
onednn_verbose,v1,info,cpu,runtime:OpenMP,nthr:1
onednn_verbose,v1,info,cpu,isa:Intel AVX2 with Intel DL Boost
onednn_verbose,v1,primitive,exec,cpu,convolution,jit:avx2,forward_training,...
MKL_VERBOSE oneMKL 2024.0 Update 2 Product build 20240605 for Intel(R) 64 architecture Intel(R) Advanced \
Vector Extensions 2 (Intel(R) AVX2) enabled processors, Lnx 2.45GHz lp64 gnu_thread
MKL_VERBOSE SGEMM(N,N,64,64,64,...) 24.35us CNR:OFF Dyn:1 FastMM:1 TID:0  NThr:1
"""
AMD_PROBE = """capability: DEFAULT
onednn_verbose,v1,info,cpu,isa:Intel SSE4.1
MKL_VERBOSE oneMKL 2024.0 Update 2 Product build 20240605 for Intel(R) 64 architecture Intel(R) Architecture \
processors, Lnx 2.45GHz lp64 gnu_thread
"""


def test_a_probe_reads_pytorch_onednn_and_mkl() -> None:
    assert parse_probe(INTEL_PROBE) == {"capability": "AVX2", "onednn": "Intel AVX2 with Intel DL Boost",
                                        "mkl": "Intel(R) Advanced Vector Extensions 2 (Intel(R) AVX2) enabled "
                                               "processors"}
    assert parse_probe(AMD_PROBE) == {"capability": "DEFAULT", "onednn": "Intel SSE4.1",
                                      "mkl": "Intel(R) Architecture processors"}
    assert parse_probe("capability: SVE256\n") == {"capability": "SVE256", "onednn": "", "mkl": ""}


@pytest.mark.parametrize(("isa", "rank"), [
    ("Intel SSE4.1", 1), ("Intel(R) Streaming SIMD Extensions 4.2 (Intel(R) SSE4.2) enabled processors", 1),
    ("Intel AVX", 2), ("Intel AVX2", 3), ("Intel AVX2 with Intel DL Boost", 3),
    ("Intel AVX-512 with AVX512BW, AVX512VL, and AVX512DQ extensions", 4),
    ("Intel(R) Advanced Vector Extensions 512 (Intel(R) AVX-512) enabled processors", 4),
    ("Intel AVX-512 with Intel DL Boost and bfloat16 support and Intel AMX with bfloat16 and 8-bit integer "
     "support", 5),
    ("Intel(R) Architecture processors", None), ("AArch64 SVE (256 bits)", None),
])
def test_instruction_sets_are_ranked_from_the_oldest_up(isa: str, rank: int | None) -> None:
    assert isa_rank(isa) == rank


def test_a_probe_is_the_set_only_if_every_library_stays_within_it() -> None:
    assert problems_of("avx2", parse_probe(INTEL_PROBE)) == []
    assert problems_of("default", parse_probe(AMD_PROBE)) == []
    assert problems_of("default", parse_probe(INTEL_PROBE)) == [
        "PyTorch reports AVX2", "oneDNN runs Intel AVX2 with Intel DL Boost",
        "MKL runs Intel(R) Advanced Vector Extensions 2 (Intel(R) AVX2) enabled processors",
    ]
    above = {"capability": "AVX2", "onednn": "Intel AVX-512 with AVX512BW, AVX512VL, and AVX512DQ extensions",
             "mkl": ""}
    assert problems_of("avx2", above) == ["oneDNN runs Intel AVX-512 with AVX512BW, AVX512VL, and AVX512DQ extensions"]
    assert problems_of("avx2", {"capability": "", "onednn": "", "mkl": ""}) == ["PyTorch reports nothing"]


def test_older_pytorch_names_the_portable_set_no_avx() -> None:
    """PyTorch 2.5 (the lowest version declared) reports ``NO AVX`` where newer releases say ``DEFAULT``."""
    assert problems_of("default", {"capability": "NO AVX", "onednn": "", "mkl": ""}) == []
    assert offered("NO AVX") == ["default"]


def test_the_portable_set_is_really_what_runs_here() -> None:
    """One real probe in a fresh interpreter: PyTorch reports DEFAULT and oneDNN stays at SSE4.1."""
    assert cpu_kernels.verify("default") == []


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "notebooks").mkdir()
    for name in ("00_a.ipynb", "01_b.ipynb", "02_c.ipynb"):
        (tmp_path / "notebooks" / name).write_text("{}")
    return tmp_path


def test_the_notebooks_are_spread_over_the_cores_a_set_has_to_itself(repo: Path) -> None:
    assert command([], 2, repo)[2:] == ["pytest", "-n", "2", "--dist", "loadfile", "notebooks"]
    assert command([], 8, repo)[2:] == ["pytest", "-n", "3", "--dist", "loadfile", "notebooks"], "3 notebooks"
    assert command(["notebooks/01_b.ipynb", "notebooks/02_c.ipynb"], 2, repo)[-4:] == [
        "--dist", "loadfile", "notebooks/01_b.ipynb", "notebooks/02_c.ipynb"]


def test_one_core_or_one_notebook_runs_without_xdist(repo: Path) -> None:
    assert command([], 1, repo)[2:] == ["pytest", "-p", "no:xdist", "notebooks"]
    assert command(["notebooks/01_b.ipynb::Cell 3"], 2, repo)[2:] == ["pytest", "-p", "no:xdist",
                                                                       "notebooks/01_b.ipynb::Cell 3"]


@pytest.mark.parametrize("choice", [["-p", "no:xdist"], ["-pno:xdist"], ["-n", "4"], ["-n4"], ["--dist", "load"]])
def test_the_pytest_args_may_choose_themselves(repo: Path, choice: list[str]) -> None:
    assert command([*choice, "notebooks/00_a.ipynb"], 2, repo)[2:] == ["pytest", *choice, "notebooks/00_a.ipynb"]


def test_options_without_a_path_still_run_the_notebooks(repo: Path) -> None:
    assert command(["-x", "-k", "Cell 3"], 1, repo)[2:] == ["pytest", "-p", "no:xdist", "-x", "-k", "Cell 3",
                                                             "notebooks"]


PYTEST_OUTPUT = """\x1b[1m============================= test session starts ==============================\x1b[0m
notebooks/05_multi_head_attention.ipynb ......F.......
=========================== short test summary info ============================
FAILED notebooks/05_multi_head_attention.ipynb::Cell 14 - Notebook cell execution failed
ERROR notebooks/09_which_heads_matter.ipynb::Cell 0 - RuntimeError: Kernel died
\x1b[31m============ 1 failed, 278 passed, 2 skipped, 1 error in 95.12s (0:01:35) =============\x1b[0m
"""


def test_a_run_is_read_off_pytest_s_closing_lines() -> None:
    summary, failed = parse_pytest(PYTEST_OUTPUT)
    assert summary == "1 failed, 278 passed, 2 skipped, 1 error in 95.12s (0:01:35)"
    assert failed == ["FAILED notebooks/05_multi_head_attention.ipynb::Cell 14",
                      "ERROR notebooks/09_which_heads_matter.ipynb::Cell 0"]
    assert parse_pytest("==== no tests ran in 0.01s ====\n") == ("no tests ran in 0.01s", [])
    assert parse_pytest("Traceback (most recent call last):\n") == ("", [])


def _fake_runs(monkeypatch: pytest.MonkeyPatch, here: list[str], failing: set[str]) -> list[tuple[str, list[str]]]:
    ran: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(cpu_kernels, "offered", lambda native=None: here)
    monkeypatch.setattr(cpu_kernels, "native_probe", lambda: {"capability": "AVX2", "onednn": "Intel AVX2", "mkl": ""})
    monkeypatch.setattr(cpu_kernels, "verify", lambda name: [])

    def run_set(name: str, cmd: list[str], log_dir: Path, echo: bool) -> Outcome:
        ran.append((name, cmd[2:]))
        if name in failing:
            return Outcome(name, 1, 1.0, "1 failed, 9 passed in 1.00s", ["FAILED notebooks/08_x.ipynb::Cell 27"],
                           "the log")
        return Outcome(name, 0, 1.0, "10 passed in 1.00s")

    monkeypatch.setattr(cpu_kernels, "run_set", run_set)
    return ran


def test_two_sets_on_two_cores_run_side_by_side_each_serial(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    ran = _fake_runs(monkeypatch, ["default", "avx2"], set())
    assert cpu_kernels.main(["--jobs", "2"]) == 0
    assert sorted(ran) == [("avx2", ["pytest", "-p", "no:xdist", "notebooks"]),
                           ("default", ["pytest", "-p", "no:xdist", "notebooks"])]
    assert "every kernel set passed: default, avx2" in capsys.readouterr().out


def test_one_set_on_two_cores_spreads_its_notebooks(monkeypatch: pytest.MonkeyPatch) -> None:
    ran = _fake_runs(monkeypatch, ["default", "avx2"], set())
    assert cpu_kernels.main(["--jobs", "2", "--sets", "avx2"]) == 0
    assert ran == [("avx2", ["pytest", "-n", "2", "--dist", "loadfile", "notebooks"])]


def test_a_failing_set_fails_the_run_and_names_its_cells(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    _fake_runs(monkeypatch, ["default", "avx2"], {"default"})
    assert cpu_kernels.main(["--jobs", "2"]) == 1
    out = capsys.readouterr().out
    assert "the log" in out, "a failed set's whole log is shown"
    assert "FAILED notebooks/08_x.ipynb::Cell 27" in out.split("kernel set  exit")[1]
    assert out.rstrip().endswith("kernel sets failed: default")


def test_a_set_above_this_cpu_is_skipped_and_an_unknown_one_refused(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    ran = _fake_runs(monkeypatch, ["default", "avx2"], set())
    assert cpu_kernels.main(["--sets", "avx512,avx2"]) == 0
    assert [name for name, _ in ran] == ["avx2"]
    assert "SKIPPED kernel set avx512" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cpu_kernels.main(["--sets", "sse9"])


def test_a_set_that_is_not_what_it_claims_fails_without_running(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    ran = _fake_runs(monkeypatch, ["default", "avx2"], set())
    monkeypatch.setattr(cpu_kernels, "verify", lambda name: ["PyTorch reports AVX2"] if name == "default" else [])
    assert cpu_kernels.main([]) == 1
    assert [name for name, _ in ran] == ["avx2"]
    assert "FAILED kernel set default: PyTorch reports AVX2" in capsys.readouterr().out


@pytest.mark.parametrize(("probe", "same"), [
    ({"capability": "AVX2", "onednn": "Intel AVX2", "mkl": ""}, "avx2"),  # an AVX2-only AMD: make test ran avx2
    ({"capability": "AVX512", "onednn": "Intel AVX-512 with AVX512BW", "mkl": "Intel(R) AVX-512"}, "avx512"),
    ({"capability": "AVX512", "onednn": "Intel AVX10.1 and Intel AMX with bfloat16", "mkl": ""}, None),  # AMX
    ({"capability": "SVE256", "onednn": "", "mkl": ""}, None),  # an ARM CPU: no x86 set is its own run
])
def test_only_a_set_that_is_exactly_the_native_run_can_be_skipped(probe: dict[str, str], same: str | None) -> None:
    assert cpu_kernels.same_as_native(probe) == same


def test_skip_native_leaves_out_the_set_make_test_already_ran(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    ran = _fake_runs(monkeypatch, ["default", "avx2"], set())  # an AVX2-only CPU: avx2 is its own run
    assert cpu_kernels.main(["--jobs", "2", "--skip-native"]) == 0
    assert [name for name, _ in ran] == ["default"]
    assert "SKIPPED kernel set avx2: it is this CPU's own run" in capsys.readouterr().out


def test_list_names_the_sets_ci_hands_out_and_runs_none(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """``--list`` (CI gives each set's notebooks to another job): the sets a run would take, nothing run."""
    ran = _fake_runs(monkeypatch, ["default", "avx2"], set())  # an AVX2-only CPU: its own run is avx2
    assert cpu_kernels.main(["--list", "--skip-native"]) == 0
    assert capsys.readouterr().out.split() == ["default"]
    assert cpu_kernels.main(["--list", "--sets", "avx512,avx2,default"]) == 0
    assert capsys.readouterr().out.split() == ["avx2", "default"], "a set above this CPU is left out"
    assert ran == []
