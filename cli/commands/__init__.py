"""Command modules; each exposes COMMANDS, a list of click commands registered on `peras`.

COMMAND_MODULES names the module of each command: `peras` imports a command's module only when the command runs
(or is listed), so a command does not pay for every other command's imports (tests/test_cli.py keeps it true).
"""

COMMAND_MODULES = {
    "demo": "demo",
    "ingest": "ingest",
    "judge": "judge",
    "judge-run": "judge_run",
    "classify": "classify",
    "metrics": "metrics",
    "import-judgments": "import_judgments",
    "report": "report",
    "deploy": "deploy",
    "sql": "sql",
    "export": "export",
    "priming": "priming",
    "subsets": "subsets",
    "runs": "runs",
    "server": "server",
    "study": "study",
    "pairwise": "pairwise",
    "personas": "personas",
    "fuse": "fuse",
    "export-qrels": "evaluate",
    "evaluate": "evaluate",
    "build-runs": "evaluate",
    "holes": "evaluate",
    "export-autojudge": "evaluate",
    "trust": "trust",
    "batch": "batch",
    "ask": "ask",
    "probes": "probes",
    "assess": "assess",
}
