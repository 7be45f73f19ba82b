"""A toy MVE of the bundled synthetic rTaste study: a nearest-centroid classifier on two Gaussian classes.

The scenario (dimensions, noise, the test split's shift, the class balance, the training size) is settings.json's;
the settings below are the ones the auditors' calibration plants its flaws in. It prints the baseline's score and
the registered event for the reader, and one RTASTE_STATISTIC line, which alone decides the event.
"""

import json
import random
from pathlib import Path

METRIC = "accuracy"
TRAIN_SPLIT = "train"
BASELINE = "majority"
SEEDS = [0, 1, 2]

SCENARIO = json.loads(Path("settings.json").read_text())


def sample(rng, n, shift):
    rows = []
    for _ in range(n):
        label = int(rng.random() < SCENARIO["imbalance"])
        centre = 1.0 if label else -1.0
        rows.append(([centre + shift + rng.gauss(0.0, SCENARIO["noise"]) for _ in range(SCENARIO["dim"])], label))
    return rows


def score(truth, guess):
    if METRIC == "balanced_accuracy":
        recalls = [sum(g == c for g, t in zip(guess, truth) if t == c) / max(1, truth.count(c)) for c in (0, 1)]
        return sum(recalls) / 2
    return sum(g == t for g, t in zip(guess, truth)) / len(truth)


def centroid(rows, label):
    members = [x for x, y in rows if y == label] or [[0.0] * SCENARIO["dim"]]
    return [sum(column) / len(members) for column in zip(*members)]


def run(seed):
    rng = random.Random(seed)
    train, test = sample(rng, SCENARIO["n_train"], 0.0), sample(rng, 200, SCENARIO["shift"])
    fit = train + test if TRAIN_SPLIT == "train+test" else train
    centres = [centroid(fit, 0), centroid(fit, 1)]
    truth = [y for _, y in test]
    guess = [min((0, 1), key=lambda c: sum((a - b) ** 2 for a, b in zip(x, centres[c]))) for x, _ in test]
    labels = [y for _, y in fit]
    constant = max((0, 1), key=labels.count) if BASELINE == "majority" else 0
    return score(truth, guess), score(truth, [constant] * len(truth))


results = [run(seed) for seed in SEEDS]
baseline = sum(b for _, b in results) / len(results)
print(f"baseline ({BASELINE}) {METRIC}: {baseline:.4f} over seeds {SEEDS}")
registered = Path("registration.json")
if registered.exists():
    event = json.loads(registered.read_text())["event"]
    print(f"registered event: {event['statistic']} {event['relation']} {event['threshold']} ({event['unit']})")
print(f"RTASTE_STATISTIC={sum(v for v, _ in results) / len(results):.4f}")
