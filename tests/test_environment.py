"""The NLSIM_* environment variables: a value a variable does not take is refused before any work, in one
line naming the variable and the value, by ``nlsim`` and by the flows' command lines alike (it was read as
if the variable were unset: ``NLSIM_PROBE=cache`` timed every path, ``NLSIM_CPU_FLAGS=avx,avx2,fma`` made a
CPU with no instruction set)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nlsim import environment
from nlsim.errors import ConfigError
from nlsim.inference.cpu import cpu_info
from tests.command import command_env, nlsim, refused

BAD = [
    ("NLSIM_PROBE", "cache", "not one of on, cached, off"),
    ("NLSIM_PROGRESS", "bars", "not one of bar, lines, off"),
    ("NLSIM_CPU_FLAGS", "avx,avx2,fma", "the flags are space-separated"),
    (
        "NLSIM_CPU_FLAGS",
        "avx2 avx512bf16",
        "'avx512bf16' is not a flag /proc/cpuinfo writes: 'avx512_bf16' is",
    ),
    ("NLSIM_DEVICE", "gpu", "not a device nlsim runs models on (cpu, cuda, cuda:N for N from 0 to 127"),
    ("NLSIM_FSYNC", "0", "not one of on, off"),
    ("NLSIM_HOME", "{file}", "a file, not a folder"),
    ("NLSIM_HOME", "{file}/home", "is a file, so no folder can be made under it"),
]


def _value(value: str, tmp_path: Path) -> str:
    (tmp_path / "a-file").write_text("not a folder")
    return value.format(file=tmp_path / "a-file")


@pytest.mark.parametrize(("name", "value", "words"), BAD)
def test_a_bad_value_is_refused_before_any_work_naming_the_variable(
    tmp_path: Path, name: str, value: str, words: str
) -> None:
    value = _value(value, tmp_path)
    (tmp_path / "c.csv").write_text("id,title\nn1,颱風今晚登陸\nn2,颱風今晚登陸全台\n", encoding="utf-8")
    args = (
        "dedup",
        "--corpus",
        "c.csv",
        "--out",
        "r",
        "--model",
        "multilingual-e5-small",
        "--threshold",
        "0.9",
    )
    message = refused(
        nlsim(*args, cwd=tmp_path, **{name: value}),
        2,
        f"{name}={value!r}",
        words,
        command="dedup",
        alone=True,
    )
    assert not (tmp_path / "r").exists(), message


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "args", "name", "value", "words"),
    [
        ("flows.dedup", ["--corpus", "c.csv", "--out", "r"], *BAD[0]),
        ("flows.serve", ["--list"], *BAD[1]),  # NLSIM_TASK_TIMEOUT_S: tests/flows/test_operations.py
    ],
)
def test_the_flows_refuse_it_too_before_any_run_or_serving(
    tmp_path: Path, module: str, args: list[str], name: str, value: str, words: str
) -> None:
    """``python -m flows.dedup`` refuses before its flow starts (no server, no run); ``flows.serve`` before
    it serves anything: every run it served would fail on the value."""
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=tmp_path,
        env=command_env(**{name: value}),
        capture_output=True,
        text=True,
        timeout=300,
    )
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert last.startswith(f"python -m {module}: error: {name}={value!r}") and words in last, proc.stderr[
        -2000:
    ]
    assert "Traceback" not in proc.stderr and not (tmp_path / "r").exists()


def test_empty_is_unset_and_the_values_are_read_as_documented(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NLSIM_PROBE", "NLSIM_PROGRESS", "NLSIM_HOME"):
        monkeypatch.setenv(name, " ")
    assert environment.probe_mode() == "on" and environment.progress_style() is None
    assert environment.home() == Path.home() / ".cache" / "nlsim"
    monkeypatch.setenv("NLSIM_PROBE", " Cached ")
    monkeypatch.setenv("NLSIM_PROGRESS", "LINES")
    assert (environment.probe_mode(), environment.progress_style()) == ("cached", "lines")
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "  avx  avx2\tavx512_bf16 ")  # blanks of any kind between
    assert cpu_info().flags == ("avx2", "avx512_bf16")  # the flags nlsim reads (ISA_FLAGS)
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "AVX AVX2 FMA")  # any case, as the other variables' values
    assert cpu_info().flags == ("avx2",)
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "")  # set and blank: a CPU with none of the flags
    assert cpu_info().flags == ()
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "avx;avx2")
    with pytest.raises(ConfigError, match=r"'avx;avx2' is not a flag name"):
        cpu_info()


@pytest.mark.parametrize(
    ("value", "meant"),
    [
        ("avx2 avx512bf16", "avx512_bf16"),
        ("AVX512_VNNI AMXBF16", "amx_bf16"),
        ("avxvnni", "avx_vnni"),
        ("avx512vnni avx2", "avx512_vnni"),
        ("amx_tile amx_int_8", "amx_int8"),
        ("avx_2", "avx2"),
    ],
)
def test_a_flag_nlsim_reads_misspelt_is_refused_naming_the_one_meant(
    monkeypatch: pytest.MonkeyPatch, value: str, meant: str
) -> None:
    """``NLSIM_CPU_FLAGS="avx2 avx512bf16"`` (an underscore left out) was taken as a CPU with avx2 and an
    unknown flag, so bf16 was never tried, and nothing said why: a flag that is one nlsim reads but for its
    underscores is refused, naming the variable, the flag and its spelling in /proc/cpuinfo."""
    monkeypatch.setenv("NLSIM_CPU_FLAGS", value)
    with pytest.raises(
        ConfigError, match=rf"^NLSIM_CPU_FLAGS={value!r}: .* /proc/cpuinfo writes: '{meant}' is"
    ):
        environment.cpu_flags()
    monkeypatch.setenv(
        "NLSIM_CPU_FLAGS", f"avx sse4_2 {meant} avx512vl avx512_vbmi2"
    )  # other flags are taken
    assert meant in environment.cpu_flags()


@pytest.mark.parametrize(
    ("value", "name"), [(" CPU ", "cpu"), ("Cuda:1", "cuda:1"), ("", None), ("xpu", "xpu")]
)
def test_nlsim_device_is_read_in_any_case_as_the_other_variables(
    monkeypatch: pytest.MonkeyPatch, value: str, name: str | None
) -> None:
    """``NLSIM_DEVICE=CPU`` was refused by torch ("Expected one of cpu, cuda, ...") while ``NLSIM_PROBE=ON``
    was taken; the device is named in any case now, and checked before torch is loaded."""
    monkeypatch.setenv("NLSIM_DEVICE", value)
    assert environment.device_name() == name


def test_cpu_in_capitals_runs_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from nlsim.encoders.device import default_device

    monkeypatch.setenv("NLSIM_DEVICE", "CPU")
    assert default_device() == torch.device("cpu")


@pytest.mark.parametrize(
    "value", ["gpu", "cuda:", "cuda:x", "meta", "cpu cuda", "cpu:00", "cuda:01", "cuda:128", "cuda:255"]
)
def test_a_device_nlsim_does_not_run_on_is_refused_before_torch(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """``cpu:00`` and ``cuda:01`` passed the name check and were refused by torch only where a model loaded;
    torch keeps a device's index in a byte, so ``cuda:255`` was ``cuda`` and ``cuda:257`` ``cuda:1``."""
    monkeypatch.setenv("NLSIM_DEVICE", value)
    with pytest.raises(ConfigError, match=r"not a device nlsim runs models on"):
        environment.check_environment()


@pytest.mark.parametrize("value", ["cpu:0", "cuda:0", "cuda:9", "cuda:10", "cuda:127", "XPU:1"])
def test_a_device_index_torch_takes_is_taken(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    import torch

    monkeypatch.setenv("NLSIM_DEVICE", value)
    assert str(torch.device(environment.device_name())) == value.lower()


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("~no-such-user-82/nlsim", "there is no user 'no-such-user-82' whose home ~no-such-user-82 would be"),
        ("{tmp}/unmounted", "unmounted is a link to {tmp}/volume, which does not exist (a volume not"),
        ("{tmp}/unmounted/nlsim", "unmounted is a link to {tmp}/volume, which does not exist"),
    ],
    ids=["unknown-user", "link-to-nothing", "under-a-link-to-nothing"],
)
def test_a_home_that_cannot_be_made_is_named_not_a_traceback_or_file_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, words: str
) -> None:
    """``~user`` of no user was pathlib's RuntimeError with a traceback; a link to a folder that is not there
    (a volume not mounted) passed the check and failed at the first write with '...: File exists'."""
    (tmp_path / "unmounted").symlink_to(tmp_path / "volume")
    value, words = value.format(tmp=tmp_path), words.format(tmp=tmp_path)
    monkeypatch.setenv("NLSIM_HOME", value)
    with pytest.raises(ConfigError) as raised:
        environment.check_environment()
    assert str(raised.value).startswith(f"NLSIM_HOME={value!r}: ") and words in str(raised.value)


def test_no_home_folder_for_the_default_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """HOME unset and a uid without an entry in the user database (a container): Path.home() gives '~',
    which pathlib could not expand (a RuntimeError)."""

    def expanduser(self: Path) -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("NLSIM_HOME", raising=False)
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: cls("~")))
    monkeypatch.setattr(Path, "expanduser", expanduser)
    with pytest.raises(ConfigError, match="NLSIM_HOME is not set and this user has no home folder"):
        environment.home()


def test_the_library_names_a_bad_home_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A caller of the library (a notebook, a deployment's worker) has no command line to check the
    variables first: a NLSIM_HOME naming a file was NotADirectoryError '.../models: Not a directory' from
    deep inside the model's conversion."""
    from nlsim.encoders.registry import registry_folder

    (tmp_path / "a-file").write_text("not a folder")
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "a-file"))
    with pytest.raises(ConfigError, match=r"NLSIM_HOME='.*a-file': a file, not a folder"):
        registry_folder("paraphrase-MiniLM-L3-v2")


@pytest.mark.parametrize(("name", "value", "words"), [BAD[0], ("NLSIM_TASK_TIMEOUT_S", "4h", "not a number")])
def test_a_deployed_run_refuses_it_before_any_work(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, value: str, words: str
) -> None:
    """A run of a deployment (served, or started by a worker) calls the flow itself, not ``python -m
    flows.X``: it read a bad value only where a stage did (NLSIM_TASK_TIMEOUT_S at the first long stage),
    after the corpus was read; here the corpus is missing, and the run names the variable, not the file."""
    from flows.dedup import news_dedup

    monkeypatch.setenv(name, value)
    state = news_dedup(
        corpus=str(tmp_path / "none.csv"), out=str(tmp_path / "r"), threshold=0.9, return_state=True
    )
    assert state.is_failed() and state.message.startswith(f"ConfigError: {name}={value!r}"), state.message
    assert words in state.message and not (tmp_path / "r").exists()


@pytest.mark.parametrize(("value", "flushed"), [(None, True), ("", True), (" ON ", True), ("off", False)])
def test_writes_are_flushed_to_disk_unless_nlsim_fsync_is_off(
    monkeypatch: pytest.MonkeyPatch, value: str | None, flushed: bool
) -> None:
    if value is None:
        monkeypatch.delenv("NLSIM_FSYNC", raising=False)
    else:
        monkeypatch.setenv("NLSIM_FSYNC", value)
    assert environment.flush_to_disk() is flushed


def test_the_first_flag_that_is_no_flag_name_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "avx2 avx,fma sse4_2 avx512f;")
    with pytest.raises(ConfigError, match=r": 'avx,fma' is not a flag name"):
        environment.cpu_flags()


@pytest.mark.parametrize(("name", "value", "words"), [b for b in BAD if b[0] != "NLSIM_HOME"])
def test_the_check_before_any_work_reads_every_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, words: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=rf"^{name}={value!r}: "):
        environment.check_environment()
