"""`peras demo`: the main job on embedded defaults (what the README's first command runs)."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

from cli.common import answer_format_option, bounded, endpoint_tags, run_flow, run_tags, settings_options
from cli.tables import WIDTH
from peras.settings import Settings


@click.command()
@click.option("--limit-pairs", type=bounded(1), help="Judge only the first N sample pairs.")
@click.option("--trials", type=bounded(1), default=50, show_default=True, help="Classifier trials.")
@click.option(
    "--base-url", "base_urls", multiple=True, help="Ask this OpenAI-compatible server instead of the embedded model."
)
@click.option("--model", help="With --base-url: the model name it serves.")
@answer_format_option(
    "auto/constrained: the embedded model's answers are constrained (llama.cpp grammars); free: never [auto]."
)
@settings_options
def demo(
    settings: Settings,
    limit_pairs: int | None,
    trials: int,
    base_urls: tuple[str, ...],
    model: str | None,
    answer_format: str | None,
) -> None:
    """Run the whole chain on the shipped sample with the embedded local CPU model.

    Ingest (with its quality gate), judge every pair under all eleven personalities with and without
    chain-of-thought (label, then verbalized confidence), the metric views, the 50-trial classifier and the
    HTML report.
    Re-running resumes: nothing already judged is asked again. Each stage prints a line as it finishes, and the
    judging its live counts. Only an explicit --base-url replaces the embedded model (PERAS_BASE_URLS does not).

    \b
    Example:
        peras demo
        peras demo --limit-pairs 8 --trials 5     # a quick look
        peras demo --base-url http://gpu:8000/v1 --model meta-llama/Llama-3.1-8B-Instruct
    """
    from cli import preflight
    from cli.commands.classify import print_table

    settings.base_urls = list(base_urls)  # the embedded model unless a URL is given here
    settings.model = model if base_urls else None
    if answer_format is not None:
        settings.answer_format = answer_format
    preflight.endpoint(settings)
    from flows.demo import demo as demo_flow  # Prefect: loaded once the checks above passed

    tags = run_tags("demo", "sample", **endpoint_tags(settings, None))
    result = run_flow(demo_flow, tags=tags, limit_pairs=limit_pairs, trials=trials, settings=settings)
    judged = result["judged"]
    console = Console(width=WIDTH)  # in a log too: rich would wrap at 80 columns there
    console.print(f"ingest: {result['ingested']['collection_id']} {result['ingested']['status']}")
    console.print(
        f"judge: {judged['run_name']}: {judged['n_planned']:,} judgments "
        f"({judged['n_sent']:,} requests sent), {judged['n_failures']} parse failures"
    )
    table = Table(title="Agreement with the qrels and confidence reliability (per personality)")
    for column in ("personality", "CoT", "n", "kappa", "QWK", "macro-F1", "HMR"):
        table.add_column(column, justify="left" if column == "personality" else "right")
    for row in result["headline"].iter_rows(named=True):
        table.add_row(
            row["personality"],
            "with" if row["cot"] else "without",
            str(row["n_scored"]),
            *(_fmt(row[k]) for k in ("cohen_kappa", "qwk", "macro_f1", "hmr")),
        )
    console.print(table)
    print_table(result["classify"])
    console.print(f"report: {result['report'].path}")
    console.print(f"warehouse: {settings.warehouse} (try: peras metrics --view all)")
    console.print(f"done in {result['elapsed_s'] / 60:.1f} min")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


COMMANDS = [demo]
