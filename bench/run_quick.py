"""The quick version of every peer benchmark (``make bench``), one summary table at the end.

Runs, each as its own process printing one JSON line:

1. bench_spike.py --n 10000            cronwheel vs APScheduler 3.x (memory, SQLite)
2. bench_delayed.py --n 5000           cronwheel (SQLite, PostgreSQL) vs Procrastinate
3. bench_register.py --sizes 10000,100000   cronwheel vs APScheduler add_job
4. bench_dispatch_lag.py --seconds 30 --python --peer   vs APScheduler, side by side
5. bench_commands.py --n 5000           `true` through local workers vs posix_spawn

Under five minutes on the project's 2-core machine. The full runs and their figures are in
docs/benchmarks.md ("Against the peers"). ``--only spike,lag`` runs a subset.

    .venv/bin/python bench/run_quick.py
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import BenchError, guard, machine_line, mib, ms, rate, ratio, run_json, secs, table

HERE = Path(__file__).resolve().parent
STEPS: dict[str, list[str]] = {
    "spike": ["bench_spike.py", "--n", "10000"],
    "delayed": ["bench_delayed.py", "--n", "5000"],
    "register": ["bench_register.py", "--sizes", "10000,100000", "--settle", "3"],
    "lag": ["bench_dispatch_lag.py", "--seconds", "30", "--jobs", "10", "--python", "--peer"],
    "commands": ["bench_commands.py", "--n", "5000", "--seconds", "2"],
}


def summary(res: dict[str, Any]) -> list[list[str]]:
    rows: list[list[str]] = []
    if "spike" in res:
        r = res["spike"]
        cw, mem, sql = r["cronwheel"], r["apscheduler_memory"], r["apscheduler_sqlite"]
        n = f"{r['n']:,}"
        rows += [
            [f"1. spike {n}: last ran after T", secs(cw["last_finished_s"]),
             f"{secs(mem['last_started_s'])} (APS memory)", ratio(cw["last_finished_s"], mem["last_started_s"])],
            ["", "", f"{secs(sql['last_started_s'])} (APS SQLite)", ratio(cw["last_finished_s"], sql["last_started_s"])],
            ["1. spike: lateness p99", ms(cw["lag_p99_ms"]), f"{ms(mem['lag_p99_ms'])} (APS memory)",
             ratio(cw["lag_p99_ms"], mem["lag_p99_ms"])],
            ["", "", f"{ms(sql['lag_p99_ms'])} (APS SQLite)", ratio(cw["lag_p99_ms"], sql["lag_p99_ms"])],
            ["1. spike: peak RSS (daemon)", mib(cw["peak_rss_mib"]), f"{mib(mem['peak_rss_mib'])} (APS memory)",
             ratio(cw["peak_rss_mib"], mem["peak_rss_mib"])],
        ]
    if "delayed" in res:
        r = res["delayed"]
        peer = r.get("procrastinate")
        for key, label in (("cronwheel_sqlite", "SQLite"), ("cronwheel_postgres", "PostgreSQL")):
            if key in r:
                rows.append([f"2. delayed {r['n']:,}: submit+execute ({label})", rate(r[key]["rate"]),
                             f"{rate(peer['rate'])} (Procrastinate)" if peer else "–",
                             ratio(r[key]["rate"], peer and peer["rate"])])
    if "register" in res:
        r = res["register"]
        mem = {p["n"]: p for p in r["apscheduler_memory"]}
        for c in r["cronwheel"]:
            p = mem.get(c["n"])
            rows.append([f"3. register {c['n']:,}: jobs/s", rate(c["register_rate"]),
                         f"{rate(p['add_rate'])} (APS memory add_job)" if p else "–", ratio(c["register_rate"], p and p["add_rate"])])
            rows.append([f"3. {c['n']:,} registered: daemon RSS (start → READY {secs(c['ready_s'])})", mib(c["rss_mib"]),
                         f"{mib(p['rss_mib'])} (APS memory)" if p else "–", ratio(c["rss_mib"], p and p["rss_mib"])])
    if "lag" in res:
        r = res["lag"]
        cw, peer = r["cronwheel"], r["apscheduler"]
        for k in ("p50", "p99", "max"):
            rows.append([f"4. idle lag {r['seconds']:.0f} s: {k}", ms(cw[f"lag_{k}_ms"]),
                         f"{ms(peer[f'lag_{k}_ms'])} (APScheduler)", ratio(cw[f"lag_{k}_ms"], peer[f"lag_{k}_ms"])])
    if "commands" in res:
        r = res["commands"]
        rows.append([f"5. `true` through workers ({r['cronwheel']['n']:,})", rate(r["cronwheel"]["rate"]),
                     f"{rate(r['ceiling']['posix_spawn_all'])} (posix_spawn ceiling)",
                     ratio(r["cronwheel"]["rate"], r["ceiling"]["posix_spawn_all"])])
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default=",".join(STEPS), help=f"comma-separated subset of {','.join(STEPS)}")
    ap.add_argument("--json", metavar="FILE", help="also write every step's result to FILE")
    args = ap.parse_args()
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in STEPS]
    if unknown:
        raise BenchError(f"unknown step(s) {', '.join(unknown)}; choose from {', '.join(STEPS)}")

    print(machine_line(), flush=True)
    results: dict[str, Any] = {}
    failed: list[str] = []
    t_all = time.perf_counter()
    for name in chosen:
        script, *rest = STEPS[name]
        t0 = time.perf_counter()
        print(f"… {name}: {script} {' '.join(rest)}", flush=True)
        try:
            results[name] = run_json([sys.executable, str(HERE / script), *rest, "--json"], timeout=600)
        except (BenchError, OSError) as exc:
            failed.append(name)
            print(f"  {name} FAILED: {exc}", file=sys.stderr, flush=True)
            continue
        print(f"  done in {time.perf_counter() - t0:.0f} s", flush=True)
    total = time.perf_counter() - t_all
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=float))
    print()
    print(table(f"Quick benchmarks against the peers ({total:.0f} s in all; ratio below 1 = cronwheel "
                "lower, for rates above 1 = cronwheel faster)",
                ["row", "cronwheel", "peer", "ratio"], summary(results)))
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    guard(main)
