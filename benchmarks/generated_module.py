"""A generated module of about 7.8 MB: is it checked in at most 5 CPU seconds?

    python benchmarks/generated_module.py [--mb 7.8] [--repeat 2]

The shape of a code generator's output (protobuf, a tokenizer's tables, an API
binding): tables of data as dict literals at the top level, thousands of
short functions and classes, and one training loop at the end.  Two variants:
the loop is right (nothing to report), or it never clears its gradients (one
GL001 that must still be found; a finding with a fix costs a second check of
the file with the fix applied, which the report needs to offer it).  Measured
in a child process (CPU seconds: user + system, the least of --repeat runs):
`gradlint check --isolated --no-cache -j 1` of the file, against CPython's
`ast.parse` of it as the reference timed in the same run.  Exit 1 when a
check takes more than 5 CPU seconds, or its findings are not the expected ones.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

TARGET_S = 5.0



def table(i: int) -> str:
    rows = "".join(f'    "token_{i}_{j}": {i * 100 + j},\n' for j in range(100))
    return f"TABLE_{i} = {{\n{rows}}}\n\n"


FUNCTION = '''def convert_{i}(value, scale=1.0):
    """Generated: scale one field."""
    if value is None:
        return TABLE_{t}.get("key_{t}_0")
    return value * scale + {i}


class Message{i}:
    FIELDS = ("a_{i}", "b_{i}")

    def __init__(self, a=None, b=None):
        self.a = a
        self.b = b

    def to_dict(self):
        return {{"a": convert_{i}(self.a), "b": self.b}}


'''
LOOP = """
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in [(torch.randn(8, 4), torch.randn(8, 1))] * 3:
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
"""
CLEAR = "    optimizer.zero_grad()\n"


def write(path: str, megabytes: float, clears: bool = False) -> int:
    """The module, about `megabytes` MB; its line count."""
    limit = int(megabytes * 1_000_000)
    parts, size, i = ["import os\n\n"], 0, 0
    while size < limit:
        chunk = table(i) if i % 4 == 0 else FUNCTION.format(i=i, t=i - i % 4)
        parts.append(chunk)
        size += len(chunk)
        i += 1
    parts.append(LOOP + (CLEAR if clears else ""))
    text = "".join(parts)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return text.count("\n")


def cpu_of(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    before = use.ru_utime + use.ru_stime
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime - before, proc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=7.8)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    ok = True
    for clears, expected in ((True, []), (False, ["GL001"])):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "generated.py")
            lines = write(path, args.mb, clears)
            size = os.path.getsize(path)
            check = [sys.executable, "-m", "gradlint", "check", "--isolated", "--no-cache", "-j", "1", "--exit-zero",
                     "--output-format", "json", path]
            parse = [sys.executable, "-c", "import ast, sys; ast.parse(open(sys.argv[1]).read())", path]
            checks = [cpu_of(check) for _ in range(args.repeat)]
            parses = [cpu_of(parse)[0] for _ in range(args.repeat)]
        check_s, proc = min(checks, key=lambda run: run[0])
        parse_s = min(parses)
        report = json.loads(proc.stdout or "{}")
        codes = [f["code"] for f in report.get("findings", [])]
        errors = report.get("errors", [])
        passed = check_s <= TARGET_S and codes == expected and not errors
        ok = ok and passed
        print(f"generated module, loop {'right' if clears else 'without a clear'}: {size} bytes, {lines} lines, "
              f"load {os.getloadavg()[0]:.1f}")
        print(f"  ast.parse      {parse_s:6.2f} CPU s")
        print(f"  gradlint -j 1  {check_s:6.2f} CPU s  ({check_s / parse_s:.2f}x ast.parse)  findings {codes} "
              f"errors {errors}")
        print(f"  target <= {TARGET_S:.0f} CPU s, findings {expected}: {'PASS' if passed else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
