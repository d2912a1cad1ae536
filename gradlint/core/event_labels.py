"""The labels of the events gradlint's run-time helpers make: the `api` of an event that verify's
probes (gradlint/verify/probes.py) or the guard (gradlint/guard/) record for a call, or for what
they infer between calls.  A rule's run-time criterion that asks which call made an event
(GL002: a zero_grad() call is never a partial freeze) compares with these, so the probes, the
guard and the criteria spell each label here only (tests/test_event_labels.py fails when a
module of gradlint spells one itself).  Stdlib only: the rules import it.

A label is what a report shows for a call whose source line is unknown; with a line, the
line's text is shown instead.
"""

# clears
OPTIMIZER_ZERO_GRAD = "optimizer.zero_grad"
MODULE_ZERO_GRAD = "module.zero_grad"
ZERO_GRAD_CALLS = (OPTIMIZER_ZERO_GRAD, MODULE_ZERO_GRAD)  # a zero_grad() call, of either
GRAD_ZERO = "grad.zero_()"  # `p.grad.zero_()` by hand (merged with the others of its line)
INFERRED_CLEAR = "inferred clear"  # a gradient gone since the last event: `p.grad = None` by hand

# backward passes
INFERRED_BACKWARD = "inferred backward"  # a gradient that appeared with no backward seen (the guard)
UNSEEN_BACKWARD = "backward (unseen call)"  # the accumulate hooks fired, no wrapped call ran (the guard)
UNPROBED_BACKWARD = "backward (unprobed path)"  # gradients written by a path verify does not probe

# steps, scalers, schedulers
OPTIMIZER_STEP = "optimizer.step"
MANUAL_UPDATE = "manual update"  # parameters changed with no optimizer step (verify measures them)
SCALER_UNSCALE = "scaler.unscale_"
SCALER_STEP = "scaler.step"  # a GradScaler step that skipped its update
SCHEDULER_STEP = "scheduler.step"
