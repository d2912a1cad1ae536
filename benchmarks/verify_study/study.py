"""Run `gradlint verify` on the public training scripts of the study (README.md) and print one
table row per script: steps reached, verdicts, exit code and why the run stopped.

    python benchmarks/verify_study/study.py [--containment MODE] ROOT [NAME ...]

ROOT holds the checked-out repositories, one folder per repository named `owner+name` (as
README.md says how to lay them out); NAME picks rows of RUNS.  The scripts run with the Python
that runs this file, which needs torch, torchvision, numpy, gymnasium, matplotlib and tensorboard.
Rows whose repository is `local` run one of the small scripts in workloads/ (this repository's
own, of the kinds the public scripts are: RL with gymnasium, a GPT with accumulation, a GAN with
DataLoader workers, a neural ODE, a TCN) in a fresh folder under ROOT/outputs.  --containment
is passed to verify (auto by default); the table says which mode each run got.
Nothing here is a test: the scripts and their data are not part of this repository.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

# name: (repository folder, working directory inside it, script, verify's options, script's arguments, environment)
RUNS = {
    "mnist": ("pytorch+examples", "mnist", "main.py", [], ["--epochs", "1"], {}),
    "vae": ("pytorch+examples", "vae", "main.py", [], ["--epochs", "1"], {}),
    "dcgan": ("pytorch+examples", "dcgan", "main.py", ["--timeout", "240"],
              ["--dataset", "fake", "--batchSize", "8", "--workers", "0", "--niter", "1", "--ngf", "16", "--ndf", "16",
               "--outf", "{tmp}/out_dcgan"], {}),
    "word_language_model": ("pytorch+examples", "word_language_model", "main.py", ["--timeout", "240"],
                            ["--epochs", "1", "--emsize", "32", "--nhid", "32", "--bptt", "20"], {}),
    "word_language_model_opt": ("pytorch+examples", "word_language_model", "main.py", ["--timeout", "240"],
                                ["--epochs", "1", "--emsize", "32", "--nhid", "32", "--bptt", "20", "--use-optimizer"], {}),
    "reinforce": ("pytorch+examples", "reinforcement_learning", "reinforce.py", [], [], {}),
    "actor_critic": ("pytorch+examples", "reinforcement_learning", "actor_critic.py", [], [], {}),
    "regression": ("pytorch+examples", "regression", "main.py", [], [], {}),
    "time_sequence_prediction": ("pytorch+examples", "time_sequence_prediction", "train.py",
                                 ["--steps", "2", "--timeout", "300"], ["--steps", "3"],
                                 {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}),
    "siamese_network": ("pytorch+examples", "siamese_network", "main.py", [], ["--epochs", "1"], {}),
    "mnist_forward_forward": ("pytorch+examples", "mnist_forward_forward", "main.py", [],
                              ["--epochs", "1"], {}),
    "gat": ("pytorch+examples", "gat", "main.py", [], ["--epochs", "1"], {}),
    "gcn": ("pytorch+examples", "gcn", "main.py", [], ["--epochs", "1"], {}),
    "super_resolution": ("pytorch+examples", "super_resolution", "main.py", [],
                         ["--upscale_factor", "2", "--nEpochs", "1"], {}),
    "makemore": ("karpathy+makemore", ".", "makemore.py", ["--timeout", "120"],
                 ["--num-workers", "0", "--max-steps", "10", "--work-dir", "{tmp}/out_makemore"], {}),
    "makemore_rnn": ("karpathy+makemore", ".", "makemore.py", ["--timeout", "120"],
                     ["--num-workers", "0", "--max-steps", "10", "--type", "rnn", "--work-dir", "{tmp}/out_makemore_rnn"], {}),
}
for _workload in ("rl_gymnasium", "gpt_accumulation", "gan_workers", "ode", "tcn"):
    RUNS[f"local {_workload}"] = ("local", _workload, f"{_workload}.py", ["--timeout", "240"], [], {})
for _script in ("REINFORCE", "actor_critic", "dqn", "ppo", "ppo-lstm", "ppo-continuous", "sac", "ddpg", "acer", "vtrace",
                "a2c", "a3c"):
    RUNS[f"minimalRL {_script}"] = ("seungeunrho+minimalRL", ".", f"{_script}.py", [], [], {"GYM_SHIM": "1"})


WORKLOADS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads")


def run(root: str, name: str, containment: str = "auto") -> dict:
    repository, folder, script, options, arguments, extra = RUNS[name]
    tmp = os.path.join(root, "outputs")
    os.makedirs(tmp, exist_ok=True)
    if repository == "local":
        cwd = os.path.join(tmp, "local_" + folder)
        os.makedirs(cwd, exist_ok=True)
        script = os.path.join(WORKLOADS, script)
    else:
        cwd = os.path.join(root, repository, folder)
    env = dict(os.environ, **{k: v for k, v in extra.items() if k != "GYM_SHIM"})
    if "GYM_SHIM" in extra:  # gym 0.26 fails under numpy 2: its drop-in replacement, gymnasium, as `gym`
        shim = os.path.join(tmp, "shims")
        os.makedirs(os.path.join(shim, "gym"), exist_ok=True)
        with open(os.path.join(shim, "gym", "__init__.py"), "w") as handle:
            handle.write("import sys, gymnasium\nsys.modules['gym'] = gymnasium\n")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (shim, env.get("PYTHONPATH")) if p)
    command = [sys.executable, "-m", "gradlint", "verify", "--format", "json", "--containment", containment, *options,
               script, "--",
               *[a.format(tmp=tmp) for a in arguments]]
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    try:
        return json.loads(result.stdout)
    except ValueError:
        return {"exit_code": result.returncode, "error": result.stderr.strip()[-300:]}


def row(name: str, report: dict) -> str:
    if "error" in report:
        return f"| {name} | - | - | - | exit {report['exit_code']}: {report['error']} |"
    verdicts = [f"{v['code']}:{v['line']} {v['verdict']}" for v in report["verdicts"]]
    verdicts += [f"{v['code']}:{v['line']} runtime only" for v in report["runtime_only"]]
    steps = ", ".join(f"{k} {n}" for k, n in report["run"]["steps_by_optimizer"].items()) or "0"
    why = (report["run"]["unverified"] or report["run"]["summary"]).splitlines()[0][:200]
    mode = (report["run"].get("containment") or {}).get("mode", "?")
    writes = len(report["run"].get("writes") or ())
    uncontained = len(report["run"].get("uncontained") or ())
    contained = f"{mode}: {writes} writes" + (f", {uncontained} not contained" if uncontained else "")
    return f"| {name} | {steps} | {'; '.join(verdicts) or 'none'} (exit {report['exit_code']}) | {contained} | {why} |"


def main(argv) -> int:
    if not argv:
        print(__doc__)
        return 2
    containment = "auto"
    if argv[0] == "--containment":
        containment, argv = argv[1], argv[2:]
    root, names = argv[0], argv[1:] or list(RUNS)
    print("| script | steps reached | verdicts | containment | why it stopped |\n|---|---|---|---|---|")
    for name in names:
        print(row(name, run(root, name, containment)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
