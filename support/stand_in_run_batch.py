"""A stand-in for `vllm run-batch -i INPUT -o OUTPUT --model MODEL`: reads OpenAI batch input lines and writes the
output lines vLLM's runner writes, answered by the scripted server's responders (support/fake_openai.py).

    python -m support.stand_in_run_batch -i round.jsonl -o out.jsonl --model fake-model

Each output line is `{"id": "vllm-<hex>", "custom_id", "response": {"status_code": 200, "request_id":
"vllm-batch-<hex>", "body": <chat.completion>}, "error": null}`, in input order. A line whose body names another
model is answered as vLLM answers it: status 400 and the error's message, no body.
"""

from __future__ import annotations

import argparse
import json
import uuid
from pathlib import Path

from support.fake_openai import Reply, _completion, instant


def answer(line: dict, model: str) -> dict:
    """vLLM's output line for one input line."""
    body = line["body"]
    if body.get("model") != model:
        response = {"status_code": 400, "request_id": f"vllm-batch-{uuid.uuid4().hex}", "body": None}
        error = f"The model `{body.get('model')}` does not exist."
        return {"id": f"vllm-{uuid.uuid4().hex}", "custom_id": line["custom_id"], "response": response, "error": error}
    completion = _completion(body, Reply(instant(body)))
    response = {"status_code": 200, "request_id": f"vllm-batch-{uuid.uuid4().hex}", "body": completion}
    return {"id": f"vllm-{uuid.uuid4().hex}", "custom_id": line["custom_id"], "response": response, "error": None}


def main(argv: list[str] | None = None) -> None:
    """Answer every line of the input file into the output file."""
    parser = argparse.ArgumentParser(description="Stand-in for vllm run-batch (scripted answers).")
    parser.add_argument("-i", "--input-file", type=Path, required=True)
    parser.add_argument("-o", "--output-file", type=Path, required=True)
    parser.add_argument("--model", required=True)
    args = parser.parse_args(argv)
    lines = [json.loads(raw) for raw in args.input_file.read_text(encoding="utf-8").splitlines() if raw.strip()]
    args.output_file.parent.mkdir(parents=True, exist_ok=True)
    with args.output_file.open("w", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(answer(line, args.model)) + "\n")


if __name__ == "__main__":
    main()
