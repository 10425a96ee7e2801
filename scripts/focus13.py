#!/usr/bin/env python3
"""FOCUS 1.3's additions to a FOCUS export in CSV, checked from the 1.3 specification's text (no rule model for
1.3 can be run here: focus-validator 2.2.1 bundles only 1.2's). Standard library only; numbers are read as exact
decimals.

    scripts/focus13.py check FILE       the 1.3 rules below; exits 1 and names each broken one
    scripts/focus13.py strip FILE OUT   FILE without the columns 1.3 adds, for the 1.2 rule model

The rules checked (FOCUS 1.3, the split-cost allocation columns and the provider columns):
- the columns are present: AllocatedMethodDetails, AllocatedMethodId, AllocatedResourceId, AllocatedResourceName,
  AllocatedTags, ServiceProviderName, HostProviderName (and the deprecated ProviderName, PublisherName);
- a row's Allocated* columns are all null (a charge not split) or all set;
- AllocatedMethodDetails is a JSON object with a non-empty `Elements` array of objects, each with a numeric
  `AllocatedRatio` in [0, 1]; `UsageUnit` (a string) wherever `UsageQuantity` (a number) is given; any other key
  custom, `x_` and PascalCase;
- the AllocatedRatio values of the charges split from one origin charge sum to exactly 1 (an origin charge: the
  allocated resource, its policy tag and the charge period), and each is the row's share of the origin's cost
  (to 1e-11, the ratios being rounded to 12 places);
- AllocatedTags is a flat JSON object of string values;
- ServiceProviderName is never null.
"""
import csv
import json
import re
import sys
from decimal import Decimal

NEW_IN_1_3 = [
    "AllocatedMethodDetails",
    "AllocatedMethodId",
    "AllocatedResourceId",
    "AllocatedResourceName",
    "AllocatedTags",
    "HostProviderName",
    "ServiceProviderName",
]
ALLOCATED = NEW_IN_1_3[:5]
KNOWN_ELEMENT_KEYS = {"AllocatedRatio", "UsageUnit", "UsageQuantity"}
CUSTOM_KEY = re.compile(r"^x_[A-Z][A-Za-z0-9]*$")


def read(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def number(v):
    return isinstance(v, Decimal)


def check(path):
    header, rows = read(path)
    problems = []
    for name in NEW_IN_1_3 + ["ProviderName", "PublisherName", "BilledCost", "ChargePeriodStart"]:
        if name not in header:
            problems.append(f"column {name} missing")
    if problems:
        return problems, 0, 0
    at = {name: i for i, name in enumerate(header)}
    origins = {}
    split = 0
    for n, r in enumerate(rows, start=2):
        cell = lambda name: r[at[name]]  # noqa: E731
        if cell("ServiceProviderName") == "":
            problems.append(f"line {n}: ServiceProviderName is null")
        present = [cell(c) != "" for c in ALLOCATED]
        if any(present) and not all(present):
            problems.append(f"line {n}: Allocated* columns partly null: {dict(zip(ALLOCATED, present))}")
            continue
        if not any(present):
            continue
        split += 1
        try:
            details = json.loads(cell("AllocatedMethodDetails"), parse_float=Decimal, parse_int=Decimal)
            tags = json.loads(cell("AllocatedTags"), parse_float=Decimal, parse_int=Decimal)
        except ValueError as e:
            problems.append(f"line {n}: not JSON: {e}")
            continue
        if not isinstance(tags, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in tags.items()
        ):
            problems.append(f"line {n}: AllocatedTags is not a flat object of strings: {tags!r}")
        elements = details.get("Elements") if isinstance(details, dict) else None
        if not isinstance(elements, list) or not elements:
            problems.append(f"line {n}: AllocatedMethodDetails has no Elements array: {details!r}")
            continue
        ratio = Decimal(0)
        for e in elements:
            if not isinstance(e, dict):
                problems.append(f"line {n}: an element is not an object: {e!r}")
                continue
            r_ = e.get("AllocatedRatio")
            if not number(r_) or not (0 <= r_ <= 1):
                problems.append(f"line {n}: AllocatedRatio {r_!r} is not a number in [0, 1]")
                continue
            ratio += r_
            if "UsageQuantity" in e:
                if not number(e["UsageQuantity"]):
                    problems.append(f"line {n}: UsageQuantity {e['UsageQuantity']!r} is not a number")
                if not isinstance(e.get("UsageUnit"), str) or not e["UsageUnit"]:
                    problems.append(f"line {n}: UsageQuantity without a UsageUnit")
            for k in e:
                if k not in KNOWN_ELEMENT_KEYS and not CUSTOM_KEY.match(k):
                    problems.append(f"line {n}: element key {k!r} is neither FOCUS's nor x_PascalCase")
        if not cell("AllocatedMethodId"):
            problems.append(f"line {n}: AllocatedMethodId is empty")
        policy = tags.get("eai-gpu/policy") if isinstance(tags, dict) else None
        key = (cell("AllocatedResourceId"), policy, cell("ChargePeriodStart"), cell("ChargePeriodEnd"))
        origins.setdefault(key, []).append((n, ratio, Decimal(cell("BilledCost"))))
    for key, members in origins.items():
        total = sum(r for _, r, _ in members)
        if total != 1:
            problems.append(f"origin charge {key}: ratios sum to {total}, not 1 (lines {[m[0] for m in members]})")
        if len(members) < 2:
            problems.append(f"origin charge {key}: split into one charge only (line {members[0][0]})")
        cost = sum(c for _, _, c in members)
        if cost > 0:
            for n, r, c in members:
                if abs(r - c / cost) > Decimal("1e-11"):
                    problems.append(f"line {n}: AllocatedRatio {r} is not its share {c}/{cost} of the origin")
    return problems, split, len(origins)


def strip(path, out):
    header, rows = read(path)
    keep = [i for i, name in enumerate(header) if name not in NEW_IN_1_3]
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow([header[i] for i in keep])
        for r in rows:
            w.writerow([r[i] for i in keep])


def main(argv):
    if len(argv) == 3 and argv[1] == "check":
        problems, split, origins = check(argv[2])
        for p in problems:
            print(f"focus 1.3: {p}")
        verdict = "ok" if not problems else f"{len(problems)} problem(s)"
        print(f"focus 1.3 checks of {argv[2]}: {split} split row(s) of {origins} origin charge(s): {verdict}")
        return 0 if not problems else 1
    if len(argv) == 4 and argv[1] == "strip":
        strip(argv[2], argv[3])
        return 0
    print(__doc__.strip().splitlines()[3:5], file=sys.stderr)
    print("usage: focus13.py check FILE | strip FILE OUT", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
