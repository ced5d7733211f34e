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
    members = [(f.as_posix(), f) for f in files if not (f.parts[0] == info and f.name in INSTALL_ONLY)]
    members += [(f"{info.removesuffix('.dist-info')}.data/scripts/{f.name}", f) for f in _data_scripts(dist)]
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as whl:
        for arcname, f in members:
            path = Path(str(dist.locate_file(f)))
            data = path.read_bytes()
            member = zipfile.ZipInfo(arcname)
            member.external_attr = path.stat().st_mode << 16  # file type and mode: uv's binary stays executable
            whl.writestr(member, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            rows.writerow([arcname, f"sha256={digest}", len(data)])
        rows.writerow([f"{info}/RECORD", "", ""])
        whl.writestr(f"{info}/RECORD", record.getvalue())
    return target


def _data_scripts(dist: md.Distribution) -> list[md.PackagePath]:
    """The files a wheel installed into the venv's ``bin`` as they were (uv's binary), not the
    launchers the installer wrote for its entry points."""
    launchers = {ep.name for ep in dist.entry_points if ep.group in ("console_scripts", "gui_scripts")}
    bin_dir = Path(sys.prefix, "bin").resolve()
    return [f for f in dist.files or [] if f.parts[0] == ".." and f.name not in launchers
            and Path(str(dist.locate_file(f))).resolve().parent == bin_dir]  # fmt: skip


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
def packed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, dict[str, float]]]:
    """A copy of the checkout and a folder of every wheel its core install needs: (source, wheels, seconds).

    The folder holds flare's wheel, its dependencies' wheels packed again from this environment and
    setuptools (the build backend an editable install builds with); pip and uv may use nothing else.
    """
    tmp = tmp_path_factory.mktemp("packed")
    seconds: dict[str, float] = {}
    source, wheels = tmp / "source", tmp / "wheels"
    wheels.mkdir()
    # a copy of the tree, so the build writes no build/ or egg-info into the checkout
    for part in ("src", "scripts"):
        shutil.copytree(ROOT / part, source / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "NOTICE"):
        shutil.copy2(ROOT / name, source / name)
    env = _no_compiler_env(tmp / "no-venv", tmp)

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
    seconds["build flare's wheel"] = time.perf_counter() - t

    t = time.perf_counter()
    for dist in [*_closure(_requires(_flare_wheel(wheels))), md.distribution("setuptools")]:
        _repack(dist, wheels)
    seconds["pack the dependencies' wheels"] = time.perf_counter() - t
    yield source, wheels, seconds
    shutil.rmtree(tmp, ignore_errors=True)  # 1.2 GB with the default model: not kept for later runs


def _flare_wheel(wheels: Path) -> Path:
    (wheel,) = wheels.glob("flare_rag-*.whl")
    return wheel


def _requires(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as whl:
        meta = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
        return [line.split(":", 1)[1].strip() for line in whl.read(meta).decode().splitlines()
                if line.startswith("Requires-Dist:")]  # fmt: skip


@pytest.fixture(scope="module")
def fresh(
    packed: tuple[Path, Path, dict[str, float]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, dict[str, str], dict[str, float]]]:
    """A new venv with flare's wheel installed offline and no compiler on PATH: (venv, env, seconds)."""
    _, wheels, packing = packed
    tmp = tmp_path_factory.mktemp("fresh")
    seconds = dict(packing)
    home = tmp / "home"
    home.mkdir()
    venv = tmp / "venv"
    env = _no_compiler_env(venv, home)
    t = time.perf_counter()
    base = getattr(sys, "_base_executable", sys.executable)
    created = _run(base, "-m", "venv", venv, env=env)
    assert created.returncode == 0, created.stderr
    installed = _run(venv / "bin" / "python", "-m", "pip", "install", "--no-index", "--only-binary=:all:",
                     "--find-links", wheels, _flare_wheel(wheels), env=env)  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    seconds["venv + offline install"] = time.perf_counter() - t
    yield venv, env, seconds
    shutil.rmtree(tmp, ignore_errors=True)  # about 2.3 GB with the default model: not kept for later runs


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

    seconds["flare index + flare ask (default model)"] = _index_and_ask(venv / "bin" / "flare", env, tmp_path)
    print("\n" + "\n".join(f"{what}: {s:.1f} s" for what, s in seconds.items()))


# The README's first command installs through scripts/setup.sh --core: uv from PyPI into .venv, then
# the core with uv, or all with pip where uv cannot be installed. Tried here as on a fresh machine:
# a new HOME (empty caches, the model assembled anew), no compiler on PATH, and pip and uv limited
# to local wheel folders (no network): `packed`'s, plus one holding uv where uv should install.


def _checkout(packed_source: Path, tmp: Path) -> Path:
    """A fresh copy of the checkout's copy: setup.sh writes .venv and egg-info into it."""
    checkout = tmp / "checkout"
    shutil.copytree(packed_source, checkout, ignore=shutil.ignore_patterns(".venv", "*.egg-info", "build"))
    return checkout


def _setup_env(tmp: Path, find_links: list[Path]) -> dict[str, str]:
    """setup.sh's environment: PATH holds only bash and dirname, a new HOME, pip and uv offline."""
    tools = tmp / "path"
    tools.mkdir()
    for tool in ("bash", "dirname"):
        found = shutil.which(tool)
        assert found is not None, f"{tool} is not on PATH here"
        (tools / tool).symlink_to(found)
    for tool in COMPILERS:
        assert shutil.which(tool, path=str(tools)) is None, tool
    home = tmp / "home"
    home.mkdir()
    keep = {k: v for k, v in os.environ.items() if k in ("LANG", "LC_ALL", "TMPDIR", "FLARE_THREADS")}
    return {**keep, "PATH": str(tools), "HOME": str(home), "PYTHON": getattr(sys, "_base_executable", sys.executable),
            "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": " ".join(str(f) for f in find_links),
            "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "UV_OFFLINE": "1", "UV_FIND_LINKS": str(find_links[0]), "UV_NO_CONFIG": "1"}  # fmt: skip


def _core_only(checkout: Path, env: dict[str, str], cwd: Path) -> None:
    """The venv runs flare from the checkout's src, with the default model's parts and no test extra."""
    check = ("import importlib.util as u, flare; from flare.lm.bundled import QWEN_1_5B as m; "
             "print(flare.__file__, sum(p.stat().st_size for p in m.part_paths()) == m.size, "
             "*(u.find_spec(n) is not None for n in ('torch', 'pytest', 'llama_cpp')))")  # fmt: skip
    where = _run(checkout / ".venv" / "bin" / "python", "-c", check, env=env, cwd=cwd)
    assert where.returncode == 0, where.stderr
    location, parts_complete, *extras = where.stdout.split()
    assert Path(location).is_relative_to(checkout / "src"), location  # editable, as the README's `-e .`
    assert parts_complete == "True" and extras == ["False"] * 3, where.stdout


@pytest.mark.slow
@pytest.mark.model
def test_the_quickstart_installs_the_core_with_uv_and_answers(
    packed: tuple[Path, Path, dict[str, float]], tmp_path: Path
) -> None:
    source, wheels, _ = packed
    try:
        uv = md.distribution("uv")
    except md.PackageNotFoundError:
        pytest.skip("uv is not installed here (scripts/setup.sh fell back to pip): its route cannot be tried")
    tools = tmp_path / "tools"
    tools.mkdir()
    _repack(uv, tools)
    checkout = _checkout(source, tmp_path)
    env = _setup_env(tmp_path, [wheels, tools])
    seconds: dict[str, float] = {}
    try:
        t = time.perf_counter()
        setup = _run("bash", checkout / "scripts" / "setup.sh", "--core", env=env, cwd=tmp_path)
        assert setup.returncode == 0, setup.stdout + setup.stderr
        seconds["scripts/setup.sh --core (uv, offline)"] = time.perf_counter() - t
        assert "could not be installed" not in setup.stderr, setup.stderr
        assert (checkout / ".venv" / "bin" / "uv").is_file()  # uv came from the wheel folder into .venv
        _core_only(checkout, env, tmp_path)

        flare = checkout / ".venv" / "bin" / "flare"
        seconds["flare index + flare ask (model assembled first)"] = _index_and_ask(flare, env, tmp_path)
        print("\n" + "\n".join(f"{what}: {s:.1f} s" for what, s in seconds.items()))
    finally:  # 2.3 GB: the venv and the assembled model
        shutil.rmtree(checkout, ignore_errors=True)
        shutil.rmtree(env["HOME"], ignore_errors=True)


def _index_and_ask(flare: Path, env: dict[str, str], tmp_path: Path) -> float:
    """Index one passage and ask about it with the default model; the seconds both took."""
    corpus = tmp_path / "c.jsonl"
    doc = {"id": "a", "title": "Alpha", "text": "Alpha was founded in 1901 by Ada Berg."}
    corpus.write_text(json.dumps(doc) + "\n")
    t = time.perf_counter()
    index = _run(flare, "index", corpus, "--index", "idx", "--quiet", env=env, cwd=tmp_path)
    assert index.returncode == 0, index.stderr
    ask = _run(flare, "ask", "Who founded Alpha?", "--index", "idx", "--json", env=env, cwd=tmp_path)
    assert ask.returncode == 0, ask.stderr
    seconds = time.perf_counter() - t
    answer = json.loads(ask.stdout)
    assert "Ada Berg" in answer["answer"], answer["answer"]
    assert any(Path(env["HOME"], ".cache").rglob("*.gguf"))  # the model was assembled in the new HOME
    return seconds


@pytest.mark.slow
def test_the_quickstart_falls_back_to_pip_where_uv_cannot_be_installed(
    packed: tuple[Path, Path, dict[str, float]], tmp_path: Path
) -> None:
    source, wheels, _ = packed
    checkout = _checkout(source, tmp_path)
    env = _setup_env(tmp_path, [wheels])  # no uv among the wheels: pip cannot install it
    try:
        setup = _run("bash", checkout / "scripts" / "setup.sh", "--core", env=env, cwd=tmp_path)
        assert setup.returncode == 0, setup.stdout + setup.stderr
        assert "uv could not be installed; installing with pip instead" in setup.stderr, setup.stderr
        assert not (checkout / ".venv" / "bin" / "uv").exists()
        _core_only(checkout, env, tmp_path)
    finally:
        shutil.rmtree(checkout, ignore_errors=True)


@pytest.mark.parametrize(
    ("args", "installer", "message"),
    [
        (["--bogus"], None, "unknown option '--bogus': use --core"),
        (["--core", "--core"], None, "one option at most (--core)"),
        (["--core"], "conda", "FLARE_SETUP_INSTALLER='conda' is not uv or pip"),
    ],
)
def test_setup_refuses_a_wrong_option_before_making_anything(
    args: list[str], installer: str | None, message: str, tmp_path: Path
) -> None:
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts")
    env = {k: v for k, v in os.environ.items() if k != "FLARE_SETUP_INSTALLER"}
    if installer is not None:
        env["FLARE_SETUP_INSTALLER"] = installer
    done = _run("bash", tmp_path / "scripts" / "setup.sh", *args, env=env, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert message in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scripts"]  # no .venv, nothing installed
