"""Project-wide analysis: a loop may do its gradient work through functions of other modules.

A training step is often split across files: `train.py` loops over batches and calls
`trainer.train_step(batch)`, whose method in `trainer.py` clears, backpropagates and steps.
Each file alone shows half of it.  This package indexes the modules of the project, so
that a call in a loop to a function or method of another module is modelled exactly as a
helper of the same file is (gradlint/model/loops.py inlines it, with its arguments bound).

Where the index is built, and why there:

* **index.py** builds it in the process that starts the run, before any file is analysed,
  from CPython's `ast` only (no libcst): a file is parsed only when its text holds a
  gradient word (the prefilter's spellings, `zero_grad`, `clip_grad`, `.grad`), or when
  it is the module an indexed file imports (its import lines only count).  A file with
  none costs one substring test.  The analysis of a file needs the summaries of the
  modules it imports before it starts, and the workers of the pool each see one file:
  so the index is made once, up front, and handed to every worker (inherited across
  fork, or sent once per worker).
* A summary is, per function and per method, its parameters, its definition's text and
  place, and the names it calls; per class, its bases and what its `self` attributes are
  built from; per module, its import aliases.  The libcst side (foreign.py) parses only
  the definitions a modelled loop really calls, once per process.
* A file's result then depends on other files: the result cache's key holds the digests
  of every module its view can reach (view.py); a file whose imports reach no indexed
  function keeps the key it had.

Imports are resolved by path only (relative imports from the file's folder, absolute ones
from the file's folder, its package root and the folders above it up to the checked
root): nothing is imported or run, and a name that resolves to nothing stays silent.
"""
