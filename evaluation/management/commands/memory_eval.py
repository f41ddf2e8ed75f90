import json
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from evaluation.gates import FLAG_GATES, Gate, gate_failures, gate_parse
from evaluation.metrics import compute, source_scores
from evaluation.runner import CaseRunner, load_cases, new_run_id
from evaluation.schema import ScenarioFormatError


class Command(BaseCommand):
    help = ("Run a scenario file (../shared/eval/FORMAT.md) through the REST API and report its metrics. "
            "By default it runs in a throwaway database and vector index, so it never touches your data.")

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--k", type=int, default=None, help="Override every probe's k.")
        parser.add_argument("--baseline", choices=["recent", "dense"], default=None,
                            help="recent: long-term recall off (sliding window and summary only). "
                                 "dense: the same memories ranked by raw cosine of the configured embedder "
                                 "(no keyword, no priors; context still from the service).")
        parser.add_argument("--json", dest="json_out", default=None, help="Write the JSON report here.")
        parser.add_argument("--case", dest="case_id", default=None, help="Run only this case id.")
        parser.add_argument("--source-ks", default="5,10,25",
                            help="Also report source_recall/all_hit/ndcg at these k (comma separated).")
        parser.add_argument("--in-place", action="store_true",
                            help="Use the configured database and vector index instead of throwaway ones.")
        parser.add_argument("--quiet", action="store_true", help="Only the summary table.")
        # Quality gates (evaluation/gates.py): below any of them the command exits non-zero after its report.
        parser.add_argument("--min-pass", type=float, default=None, help="Fail below this probe_pass_rate.")
        parser.add_argument("--min-hit", type=float, default=None, help="Fail below this expect_hit_rate.")
        parser.add_argument("--max-stale", type=float, default=None, help="Fail above this stale_injection_rate.")
        parser.add_argument("--max-erasure", type=float, default=None, help="Fail above this erasure_violation_rate.")
        parser.add_argument("--min-entity", type=float, default=None, help="Fail below this entity_accuracy.")
        parser.add_argument("--min-source-recall", type=float, default=None, help="Fail below this source_recall@k.")
        parser.add_argument("--gate", action="append", default=[], metavar="METRIC>=N|METRIC<=N",
                            help="Fail unless this bound on any report metric holds (repeatable), "
                                 "e.g. --gate 'source_recall@10>=0.6'.")

    def handle(self, *args, file: str, k, baseline, json_out, case_id, source_ks, in_place, quiet, gate, **options):
        gates = self._gates(gate, options)
        path = Path(file)
        if not path.exists():
            raise CommandError(f"no such file: {file}")
        try:
            cases = load_cases(str(path), case_id)
        except ScenarioFormatError as exc:
            raise CommandError(f"{path.name} is not a scenario file this runner can read: {exc}") from exc
        if not cases:
            raise CommandError("no cases to run")
        ks = tuple(int(x) for x in source_ks.split(",") if x.strip())
        cleanup = None if in_place else self._isolate()
        started = time.perf_counter()
        try:
            results = self._run(cases, k=k, baseline=baseline, ks=ks, quiet=quiet)
        finally:
            if cleanup:
                cleanup()
        elapsed = time.perf_counter() - started
        metrics = compute(results, source_ks=ks)
        report = {"file": path.name, "k": k or 5, "baseline": baseline, "metrics": metrics,
                  "elapsed_s": round(elapsed, 1),
                  "cases": [{"id": c.id, "passed": c.passed, **({"error": c.error} if c.error else {}),
                             "probes": [self._probe_json(p, ks) for p in c.probes]}
                            for c in results]}
        self._print(report, quiet)
        if json_out:
            Path(json_out).write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
            self.stdout.write(f"JSON report: {json_out}")
        failures = gate_failures(report, gates)
        if failures:
            raise CommandError(f"{path.name}: quality gate failed: " + "; ".join(failures))
        if gates:
            self.stdout.write(f"quality gates held: {', '.join(str(g) for g in gates)}")

    @staticmethod
    def _gates(texts: list[str], options: dict) -> list[Gate]:
        gates = [Gate(metric, op, options[flag]) for flag, (metric, op) in FLAG_GATES.items()
                 if options.get(flag) is not None]
        try:
            return gates + [gate_parse(text) for text in texts]
        except ValueError as exc:
            raise CommandError(str(exc)) from exc

    @staticmethod
    def _probe_json(probe, ks) -> dict:
        out = {"label": probe.label, "passed": probe.passed, "failures": probe.failures}
        if probe.source_gold:  # per probe, so a file's cases can be split (tuning vs report half) afterwards
            out["source_recall"] = {str(k): round(source_scores(probe, k)[0], 4) for k in ks or (probe.k,)}
        return out

    def _isolate(self):
        """A fresh test database and vector index for this run, dropped afterwards."""
        from memory.vector_index import reset_vector_index

        tmp = tempfile.TemporaryDirectory(prefix="memory-eval-")
        old_index = settings.VECTOR_INDEX_PATH
        settings.VECTOR_INDEX_PATH = str(Path(tmp.name) / "qdrant")
        reset_vector_index()
        old_name = connection.settings_dict["NAME"]
        if connection.vendor == "sqlite":
            # A file, as the service keeps it (WAL, the busy timeout): Django's default test database is
            # in memory with a shared cache, where a write beside a background thread's read (the
            # access-stats flush, a snapshot refresh) fails at once with "database table is locked", and
            # an eager projection lost that way left a case's memories out of the vector index.
            test = connection.settings_dict.setdefault("TEST", {})
            old_test_name, test["NAME"] = test.get("NAME"), str(Path(tmp.name) / "eval.sqlite3")
        connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)

        def cleanup():
            from memory.recall.access_stats import flush_pending

            flush_pending()  # into this run's database: the same ids exist in the one restored below
            connection.creation.destroy_test_db(old_name, verbosity=0)
            if connection.vendor == "sqlite":
                connection.settings_dict["TEST"]["NAME"] = old_test_name
            reset_vector_index()
            settings.VECTOR_INDEX_PATH = old_index
            tmp.cleanup()

        return cleanup

    def _drain(self):
        from memory.enqueue import tasks_eager

        if tasks_eager():
            return  # eager: every task already ran inside the request that queued it
        from memory.selectors import projection_lag

        deadline = time.time() + 120
        while time.time() < deadline:
            lag = projection_lag()
            if not lag["lagging_memories"] and not lag["queue_depth"]:
                return
            time.sleep(0.1)

    def _run(self, cases, *, k, baseline, ks, quiet):
        run_id = new_run_id()
        results = []
        for case in cases:
            t0 = time.perf_counter()
            result = CaseRunner(case, run_id=run_id, k_override=k, baseline=baseline, source_ks=ks).run(self._drain)
            results.append(result)
            if not quiet:
                passed = sum(p.passed for p in result.probes)
                mark = "PASS" if result.passed else "FAIL"
                self.stdout.write(f"{mark} {case['id']:<28} probes {passed}/{len(result.probes)} "
                                  f"({time.perf_counter() - t0:.1f}s){'  ERROR ' + result.error if result.error else ''}")
                for probe in result.probes:
                    if not probe.passed and len(result.probes) <= 20:
                        for failure in probe.failures[:6]:
                            self.stdout.write(f"     {probe.label}: {failure}")
        return results

    def _print(self, report, quiet):
        metrics = report["metrics"]
        self.stdout.write("")
        self.stdout.write(f"{report['file']}  cases={len(report['cases'])}  baseline={report['baseline']}  "
                          f"elapsed={report['elapsed_s']}s")
        for name, value in metrics.items():
            if isinstance(value, dict):
                if value:
                    self.stdout.write(f"  {name:<36} " + "  ".join(f"{k}={v}" for k, v in value.items()))
            else:
                self.stdout.write(f"  {name:<36} {value}")
