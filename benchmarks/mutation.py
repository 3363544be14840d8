"""Mutation testing of one module against its tests: how much of its behaviour the tests pin.

    python benchmarks/mutation.py MODULE TEST [TEST ...] [--sample 60] [--seed 16] [--children 1]
        [--timeout-multiplier 3] [--workdir DIR]

Runs mutmut 3 (the ``dev`` extra installs it) on ``MODULE`` (a path such as ``qwen3/parse.py``) with only the tests
given (files or pytest node ids), in a scratch copy of the repository (its packages, tests, benchmarks and docs):
the recorded exchanges beside the repository are not beside the copy, so only the project's own fixtures run
(tests that need the recordings skip, as on a clone). mutmut makes every mutant of the module; a sample of
``--sample`` of them, drawn with ``random.Random(seed)`` from their sorted names, is run. Prints the sample's
``killed/total`` and each survivor's diff. A mutant no selected test reaches counts as a survivor.

Exit status 0 whatever the score (a measurement, not a gate). ``--workdir`` keeps the scratch copy (mutmut's
``mutants/`` folder, its stats and results) for ``mutmut show`` / ``mutmut browse`` there; else it is deleted.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPIED = ("qwen3", "clients", "tests", "benchmarks", "docs", "conftest.py", "README.md")
KILLED = {"killed", "timeout", "caught by type check"}
NO_MATCH = "no_mutant_has_this_name"


def mutmut_config(module: str, tests: list[str], timeout_multiplier: float = 3.0) -> str:
    """The ``[tool.mutmut]`` table: mutate ``module`` only, run ``tests`` only, stop a run at its first failure."""

    def toml_list(items: list[str]) -> str:
        return "[" + ", ".join(f'"{item}"' for item in items) + "]"

    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["qwen3", "clients"]\n'
        f"only_mutate = {toml_list([module])}\n"
        f"pytest_add_cli_args_test_selection = {toml_list(tests)}\n"
        # one process per test run (the repository's addopts ask xdist for three): mutmut forks its own children
        'pytest_add_cli_args = ["-x", "-q", "-p", "no:cacheprovider", "-n", "0"]\n'
        # a mutant that hangs is killed after (its tests' clean time + 1 s) x 2 x this many CPU seconds
        f"timeout_multiplier = {timeout_multiplier}\n"
        "use_git_change_detection = false\n"
        f"also_copy = {toml_list([name for name in COPIED if name not in ('qwen3', 'clients', 'tests')])}\n"
    )


def prepare(workdir: Path, module: str, tests: list[str], timeout_multiplier: float) -> None:
    """The scratch copy mutmut runs in, with a ``pyproject.toml`` that scopes it."""
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, workdir / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, workdir / name)
    pyproject = (ROOT / "pyproject.toml").read_text("utf-8")
    (workdir / "pyproject.toml").write_text(pyproject + mutmut_config(module, tests, timeout_multiplier), "utf-8")


def mutmut(workdir: Path, *args: str, check: bool = True) -> str:
    """One mutmut command in ``workdir``; its output."""
    command = [str(Path(sys.executable).parent / "mutmut"), *args]
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise SystemExit(f"mutmut {' '.join(args[:1])} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


def mutant_names(workdir: Path, module: str) -> list[str]:
    """Every mutant of ``module``: made by a first ``mutmut run`` that selects none of them (it generates them
    and records which tests reach which function, and runs no mutant)."""
    mutmut(workdir, "run", "--max-children", "1", NO_MATCH, check=False)
    meta = workdir / "mutants" / (module + ".meta")
    if not meta.exists():
        raise SystemExit(f"mutmut made no mutants of {module}: is it a module under qwen3/ or clients/?")
    import json

    return sorted(json.loads(meta.read_text("utf-8"))["exit_code_by_key"])


def statuses(workdir: Path) -> dict[str, str]:
    """Each run mutant's status, as ``mutmut results`` prints it."""
    found = re.findall(r"^\s+(\S+): (.+)$", mutmut(workdir, "results", "--all", "true"), re.MULTILINE)
    return dict(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("module", help="the module to mutate, e.g. qwen3/parse.py")
    parser.add_argument("tests", nargs="+", help="the test files or node ids that pin it")
    parser.add_argument("--sample", type=int, default=60, help="mutants to run (default 60)")
    parser.add_argument("--seed", type=int, default=16, help="seed of the sample (default 16)")
    parser.add_argument("--children", type=int, default=1, help="mutants run at once (default 1)")
    parser.add_argument(
        "--timeout-multiplier",
        type=float,
        default=3.0,
        help="a mutant is killed after (clean time of its tests + 1 s) x 2 x this many CPU seconds (default 3)",
    )
    parser.add_argument("--workdir", type=Path, help="keep the scratch copy here (an empty or new folder)")
    args = parser.parse_args()
    if not (ROOT / args.module).is_file():
        raise SystemExit(f"no such module: {args.module} (give a path under the repository, e.g. qwen3/parse.py)")

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="mutation-")) / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        prepare(workdir, args.module, args.tests, args.timeout_multiplier)
        names = mutant_names(workdir, args.module)
        sample = sorted(random.Random(args.seed).sample(names, min(args.sample, len(names))))
        run = mutmut(workdir, "run", "--max-children", str(args.children), *sample, check=False)
        status = statuses(workdir)
        if not any(status.get(name) in KILLED | {"survived"} for name in sample):
            raise SystemExit(f"mutmut checked no mutant; its output:\n{run}")
        survivors = [name for name in sample if status.get(name) not in KILLED]
        version = mutmut(workdir, "--version").strip()
        print(f"{args.module}: {len(sample) - len(survivors)}/{len(sample)} killed")
        print(f"  ({len(names)} mutants, sample of {len(sample)}, seed {args.seed}, {version})")
        for name in survivors:
            print(f"\n=== {name}: {status.get(name, 'not run')}")
            print(mutmut(workdir, "show", name, check=False).strip())
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
