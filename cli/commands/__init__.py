"""Command modules; each exposes COMMANDS, a list of click commands registered on `peras`."""

COMMAND_MODULES = [
    "demo",
    "ingest",
    "judge",
    "judge_run",
    "classify",
    "metrics",
    "import_judgments",
    "report",
    "deploy",
    "sql",
    "export",
    "priming",
    "subsets",
    "runs",
    "server",
    "study",
    "pairwise",
    "personas",
    "fuse",
    "evaluate",
]
