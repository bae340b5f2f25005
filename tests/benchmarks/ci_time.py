"""Where a test run's time goes, by xdist group and by module.

    PYTEST_ADDOPTS=--durations=0 bash tests/run > run.log
    python tests/benchmarks/ci_time.py run.log

Sums pytest's durations (every test's setup, call and teardown) into worker-minutes:
two workers share the run, so the run takes at least half the total, and at least
its largest group (a group's tests run one after another on one worker).
"""

import collections
import re
import sys

# "12.34s call     tests/site/test_boot.py::test_x[param]@site"
DURATION = re.compile(r"^(\d+\.\d+)s (setup|call|teardown)\s+(\S+)")


def durations(lines) -> list[tuple[float, str]]:
    """(seconds, test id) of every phase pytest reported."""
    found = (DURATION.match(line) for line in lines)
    return [(float(m.group(1)), m.group(3)) for m in found if m]


def main(path: str):
    with open(path) as log:
        phases = durations(log)
    by_group, by_module = collections.Counter(), collections.Counter()
    for seconds, test in phases:
        by_group[test.split("@")[1] if "@" in test else "(none)"] += seconds / 60
        by_module[test.split("::")[0]] += seconds / 60
    total = sum(by_group.values())
    print(f"{total:.1f} worker-min over {len(phases)} phases (two workers: {total / 2:.1f} min)")
    for name, minutes in by_group.most_common():
        print(f"  group {name:12s} {minutes:6.1f}")
    for name, minutes in by_module.most_common():
        print(f"  {name:50s} {minutes:6.1f}")


if __name__ == "__main__":
    main(sys.argv[1])
