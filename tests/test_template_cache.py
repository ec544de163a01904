"""report.html's compiled template is kept in the user's cache between runs: a warm cache gives the same page
without compiling, and whatever is wrong with the cache (no folder, a read-only or shared one, a corrupt, cut,
planted or linked file) only means the template is compiled as before."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from jinja2 import Environment

from releasegate.record.records import RunDir
from releasegate.report import html, template_cache
from releasegate.report.view import RunView

TEMPLATE = "report.html.j2"


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    html._environment.cache_clear()
    yield home / "releasegate" / "templates"
    html._environment.cache_clear()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    """A run checked through the replay backend, its reports written."""
    from conftest import GOOD, replay_scaffold
    from releasegate.cli import main

    project = tmp_path_factory.mktemp("cached")
    replay_scaffold(project, {"example-001": GOOD, "example-002": "<b>not json</b>"})
    cwd = os.getcwd()
    os.chdir(project)
    try:
        assert main(["check", "-c", "releasegate.yaml", "--run-id", "r", "--no-progress", "--allow-pending"]) in (0, 1)
    finally:
        os.chdir(cwd)
    return RunDir(project / "reports" / "r")


def fresh_environment() -> tuple[Environment, list[str]]:
    """report.html's environment as a new process makes it, and the names of the templates it compiles."""
    html._environment.cache_clear()
    env = html._environment()
    compiled: list[str] = []
    compile_source = env.compile

    def counting(source, name=None, filename=None, *args, **kwargs):
        compiled.append(name)
        return compile_source(source, name, filename, *args, **kwargs)

    env.compile = counting  # type: ignore[method-assign]
    return env, compiled


def code_of(env: Environment) -> object:
    return env.get_template(TEMPLATE).root_render_func.__code__


def cached_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.jinja"))


def test_a_warm_cache_gives_the_same_code_without_compiling(cache_home: Path) -> None:
    cold, compiled = fresh_environment()
    first = code_of(cold)
    assert compiled == [TEMPLATE] and len(cached_files(cache_home)) == 1
    warm, compiled = fresh_environment()
    assert code_of(warm) == first and compiled == []


def test_the_page_is_the_same_from_a_cold_a_warm_and_no_cache(cache_home: Path, run: RunDir,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    view = RunView.load(run)
    cold = html.render_html(view)
    html._environment.cache_clear()
    warm = html.render_html(view)
    monkeypatch.setattr(html, "template_cache", lambda: None)
    html._environment.cache_clear()
    assert cold == warm == html.render_html(view)
    assert "&lt;b&gt;not json&lt;/b&gt;" in cold  # still escaped from the cached code


@pytest.mark.parametrize("damage", ["garbage", "cut", "flipped", "empty", "other magic"])
def test_a_corrupt_file_is_compiled_again_and_replaced(cache_home: Path, damage: str) -> None:
    first = code_of(fresh_environment()[0])
    [path] = cached_files(cache_home)
    data = path.read_bytes()
    path.write_bytes({"garbage": b"\x00\xff" * 100, "cut": data[: len(data) // 2], "empty": b"",
                      "flipped": data[:-10] + bytes([data[-10] ^ 1]) + data[-9:],
                      "other magic": b"x" + data[1:]}[damage])
    env, compiled = fresh_environment()
    assert code_of(env) == first and compiled == [TEMPLATE]
    assert path.read_bytes() == data  # written whole again
    env, compiled = fresh_environment()
    assert code_of(env) == first and compiled == []


def test_a_payload_jinja2_cannot_read_is_compiled_again(cache_home: Path) -> None:
    """A file whose digest holds but whose content jinja2 rejects (another version's format)."""
    import hashlib

    first = code_of(fresh_environment()[0])
    [path] = cached_files(cache_home)
    payload = b"not a jinja2 bucket"
    path.write_bytes(template_cache.MAGIC + hashlib.sha256(payload).digest() + payload)
    env, compiled = fresh_environment()
    assert code_of(env) == first and compiled == [TEMPLATE]


def test_an_unwritable_cache_folder_compiles_every_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder's parent should be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert template_cache.template_cache() is None
    env, compiled = fresh_environment()
    assert env.bytecode_cache is None
    code_of(env)
    assert compiled == [TEMPLATE]
    html._environment.cache_clear()


def test_a_failed_write_is_no_error(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from releasegate.errors import InputError

    def full_disk(*args: object, **kwargs: object) -> None:
        raise InputError("cannot write compiled template: No space left on device")

    monkeypatch.setattr(template_cache, "replace_file", full_disk)
    env, compiled = fresh_environment()
    code_of(env)
    assert compiled == [TEMPLATE] and cached_files(cache_home) == []  # nothing kept, nothing broken
    env, compiled = fresh_environment()
    code_of(env)
    assert compiled == [TEMPLATE]


def test_a_folder_others_can_write_to_is_not_used(cache_home: Path) -> None:
    cache_home.mkdir(parents=True)
    cache_home.chmod(0o777)
    assert template_cache.template_cache() is None
    cache_home.chmod(0o700)
    assert template_cache.template_cache() is not None


def test_a_linked_cache_folder_is_not_used(cache_home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    cache_home.parent.mkdir(parents=True)
    cache_home.symlink_to(elsewhere)
    assert template_cache.template_cache() is None


def test_a_linked_or_foreign_file_is_not_run(cache_home: Path, tmp_path: Path) -> None:
    first = code_of(fresh_environment()[0])
    [path] = cached_files(cache_home)
    planted = tmp_path / "planted.jinja"
    planted.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(planted)
    env, compiled = fresh_environment()
    assert code_of(env) == first and compiled == [TEMPLATE]  # compiled; the link replaced by a file of its own
    assert not path.is_symlink()
    if os.getuid() == 0:  # only root can give a file away
        os.chown(path, 12345, 12345)
        env, compiled = fresh_environment()
        code_of(env)
        assert compiled == [TEMPLATE]
    path.chmod(0o666)
    env, compiled = fresh_environment()
    code_of(env)
    assert compiled == [TEMPLATE]


def test_a_changed_template_or_option_is_another_file(cache_home: Path) -> None:
    env, _ = fresh_environment()
    cache = env.bytecode_cache
    assert isinstance(cache, template_cache.CompiledTemplates)
    one = cache.get_bucket(env, TEMPLATE, "f", "{{ a }}")
    other_source = cache.get_bucket(env, TEMPLATE, "f", "{{ b }}")
    trimmed = Environment(trim_blocks=False, lstrip_blocks=True, autoescape=True)
    other_option = cache.get_bucket(trimmed, TEMPLATE, "f", "{{ a }}")
    assert len({cache._path(one), cache._path(other_source), cache._path(other_option)}) == 3


def test_no_home_means_no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", "")
    monkeypatch.setattr(os.path, "expanduser", lambda path: path)
    assert template_cache.cache_folder() is None
    assert template_cache.template_cache() is None


def test_the_xdg_folder_is_used_when_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert template_cache.cache_folder() == tmp_path / "releasegate" / "templates"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert template_cache.cache_folder() == tmp_path / "home" / ".cache" / "releasegate" / "templates"
