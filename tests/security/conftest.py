import json
import os


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from tests.security.helpers import FUZZ_FAILURES, FUZZ_STATUS

    if not FUZZ_STATUS:
        return
    cases = sum(sum(counter.values()) for counter in FUZZ_STATUS.values())
    totals = {}
    for counter in FUZZ_STATUS.values():
        for status, n in counter.items():
            totals[status] = totals.get(status, 0) + n
    terminalreporter.write_sep("-", "schemathesis fuzz")
    terminalreporter.write_line(f"operations: {len(FUZZ_STATUS)}  cases: {cases}  failures: {len(FUZZ_FAILURES)}  "
                                f"statuses: {dict(sorted(totals.items()))}")
    for failure in FUZZ_FAILURES[:20]:
        terminalreporter.write_line(f"  {failure}")
    out = os.environ.get("FUZZ_REPORT")
    if out:
        from tests.conftest import SERVICE_PROFILE

        report = {"profile": "service" if SERVICE_PROFILE else "embedded",
                  "examples_per_operation": int(os.environ.get("FUZZ_EXAMPLES", "10")),
                  "seed": int(os.environ.get("FUZZ_SEED", "20260601")),
                  "operations": len(FUZZ_STATUS), "cases": cases, "failures": FUZZ_FAILURES,
                  "statuses": {str(k): v for k, v in sorted(totals.items())},
                  "per_operation": {label: {str(k): v for k, v in sorted(c.items())}
                                    for label, c in sorted(FUZZ_STATUS.items())}}
        with open(out, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=1)
        terminalreporter.write_line(f"fuzz report: {out}")
