"""The peers of a small `peras judge` run (bench/bench_small_run.py), each a whole command in its own process.

UMBRELA itself runs from bench/umbrela_judge.py, in its own environment. `--loop sdk` is the strictest peer of a
small run, an UMBRELA-style loop faster than UMBRELA: one OpenAI SDK client (`AsyncOpenAI`), a semaphore of
`--concurrency` (UMBRELA asks one request at a time), one chat request per pair with an UMBRELA-style prompt (query,
passage, "##final score: N"), the label read from the answer, and nothing else imported (UMBRELA imports torch,
transformers and pyserini, which starts a JVM). Its imports and start are counted. `--loop raw` is the ceiling: a
bare asyncio loop writing the same requests over keep-alive HTTP/1.1 connections (one per slot), no client library.

    python bench/peer_loops.py --loop sdk|raw --pairs pairs.jsonl --base-url URL --model M [--concurrency 8]

Prints `judged N labels (R unreadable)`; the pairs file is JSON lines of {"query": ..., "passage": ...}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

PROMPT = (
    "Given a query and a passage, you must provide a score on an integer scale of 0 to 3 with the following "
    "meanings:\n0 = represent that the passage has nothing to do with the query,\n1 = represents that the passage "
    "seems related to the query but does not answer it,\n2 = represents that the passage has some answer for the "
    "query, but the answer may be a bit unclear, or hidden amongst extraneous information and\n3 = represents that "
    "the passage is dedicated to the query and contains the exact answer.\n\nQuery: {query}\nPassage: {passage}\n\n"
    "Split this problem into steps: consider the underlying intent of the search, measure how well the content "
    "matches a likely intent of the query (M), measure how trustworthy the passage is (T), consider the aspects "
    "above and the relative importance of each, and decide on a final score (O). Final score must be an integer "
    "value only. Do not provide any code in result. Provide each score in the format of: ##final score: score "
    "without providing any reasoning."
)
SCORE = re.compile(r"(?:##final score:\s*)?([0-3])")


def label(text: str) -> int | None:
    """The 0-3 score in an answer, None if there is none."""
    found = SCORE.search(text)
    return int(found.group(1)) if found else None


def body(model: str, pair: dict[str, str]) -> dict[str, object]:
    prompt = PROMPT.format(query=pair["query"], passage=pair["passage"])
    return {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": 100, "temperature": 0}


async def sdk_loop(pairs: list[dict[str, str]], base_url: str, model: str, concurrency: int) -> list[int | None]:
    """UMBRELA's shape: one AsyncOpenAI client, a semaphore, one request per pair."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=2)
    slots = asyncio.Semaphore(concurrency)

    async def judge(pair: dict[str, str]) -> int | None:
        async with slots:
            answer = await client.chat.completions.create(**body(model, pair))  # type: ignore[call-overload]
            return label(answer.choices[0].message.content or "")

    try:
        return list(await asyncio.gather(*(judge(pair) for pair in pairs)))
    finally:
        await client.close()


async def raw_loop(pairs: list[dict[str, str]], base_url: str, model: str, concurrency: int) -> list[int | None]:
    """The ceiling: `concurrency` keep-alive connections, each taking the next pair, HTTP/1.1 written by hand."""
    url = urlsplit(base_url)
    host, port, path = url.hostname or "127.0.0.1", url.port or 80, url.path.rstrip("/") + "/chat/completions"
    labels: list[int | None] = [None] * len(pairs)
    queue = iter(range(len(pairs)))

    async def connection() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            for index in queue:
                payload = json.dumps(body(model, pairs[index])).encode()
                head = f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                writer.write(f"{head}Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
                status = await reader.readline()
                if b" 200 " not in status:
                    raise RuntimeError(f"server said {status!r}")
                length = 0
                while (line := await reader.readline()) not in (b"\r\n", b""):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                answer = json.loads(await reader.readexactly(length))
                labels[index] = label(answer["choices"][0]["message"]["content"] or "")
        finally:
            writer.close()

    await asyncio.gather(*(connection() for _ in range(concurrency)))
    return labels


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--loop", choices=["sdk", "raw"], required=True)
    parser.add_argument("--pairs", type=Path, required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--concurrency", type=int, default=8)
    options = parser.parse_args()
    pairs = [json.loads(line) for line in options.pairs.read_text(encoding="utf-8").splitlines() if line]
    loop = sdk_loop if options.loop == "sdk" else raw_loop
    labels = asyncio.run(loop(pairs, options.base_url, options.model, options.concurrency))
    print(f"judged {len(labels)} labels ({sum(x is None for x in labels)} unreadable)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
