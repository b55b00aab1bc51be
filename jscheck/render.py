"""Renders conversations through chat templates with Python's Jinja2 the way transformers'
apply_chat_template does: a sandboxed environment with trim_blocks and lstrip_blocks, the
loop controls, a tojson filter that keeps non-ASCII text, raise_exception and
strftime_now, and a `generation` tag whose block records where its output lands in the
rendered text (the assistant-only loss mask).

    python3 render.py < request.json

The request and the answer are those of render.mjs's render mode: {"templates": {name:
path}, "rows": [{"messages", "tools"}], "tokens": {...}} in, {name: [{"text", "spans"
(UTF-8 byte offsets), "error"}]} out.
"""

import datetime
import json
import sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Generation(Extension):
    """{% generation %} ... {% endgeneration %}: the block renders as it is, and the place
    of its output in the text rendered so far is recorded."""

    tags = {"generation"}

    def __init__(self, environment):
        super().__init__(environment)
        self.blocks = None  # the rendered pieces so far, while a render is tracked
        self.spans = None

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_mark"), [], [], body).set_lineno(lineno)

    def _mark(self, caller):
        out = caller()
        if self.blocks is not None:
            start = len("".join(self.blocks))
            self.spans.append((start, start + len(out)))
        return out


def tojson(value, indent=None, separators=None, sort_keys=False):
    return json.dumps(value, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def strftime_now(fmt):
    return datetime.datetime.now().strftime(fmt)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, template, row, tokens):
    gen = env.extensions[Generation.identifier]
    gen.blocks, gen.spans = [], []
    try:
        for piece in template.generate(messages=row["messages"], tools=row.get("tools"), documents=None,
                                       add_generation_prompt=False, **tokens):
            gen.blocks.append(piece)
        text = "".join(gen.blocks)
        # Character offsets to UTF-8 byte offsets, as render.mjs reports them.
        spans = [[len(text[:s].encode()), len(text[:e].encode())] for s, e in gen.spans]
        return {"text": text, "spans": spans}
    finally:
        gen.blocks = gen.spans = None


def main():
    req = json.load(sys.stdin)
    tokens = req.get("tokens") or {}
    out = {}
    for name, path in req["templates"].items():
        env = environment()
        with open(path, encoding="utf-8") as f:
            template = env.from_string(f.read())
        results = []
        for row in req["rows"]:
            try:
                results.append(render(env, template, row, tokens))
            except Exception as e:  # the template's own failure, reported per row
                results.append({"error": f"{type(e).__name__}: {e}"})
        out[name] = results
    json.dump(out, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
