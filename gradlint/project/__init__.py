"""Project-wide analysis: a loop may do its gradient work through functions of other modules.

A training step is often split across files: `train.py` loops over batches and calls
`trainer.train_step(batch)`, whose method in `trainer.py` clears, backpropagates and steps.
Each file alone shows half of it.  This package indexes the modules of the project, so
that a call in a loop to a function or method of another module is modelled exactly as a
helper of the same file is (gradlint/model/loops.py inlines it, with its arguments bound).

Where the index is built, and why there:

* **run.py** builds it in the process that starts the run, before any file is analysed:
  a file's analysis needs the summaries of the modules it calls into before it starts,
  and each worker of the pool sees one file.  So the index is made once, up front, and
  handed to every worker (inherited across fork, or sent once per worker); a worker
  never parses for it (the index is frozen).
* It costs little because almost nothing is parsed.  **scan.py** reads every file as text
  (a few regular expressions, the prefilter's order of cost): the defs around a gradient
  spelling, placed by indentation.  A file that calls one of them (a function bare or
  through its module, a method when it imports the method's class) inside a loop is a
  *caller*; a def around such a call outside a loop wraps it and joins them.  Only the
  callers and the modules their imports lead to are parsed, with CPython's `ast`
  (**index.py**); most files with gradient words are scripts no other file calls into.
* A summary is, per function and method, its parameters, its definition's text and place,
  the names it calls; per class, its bases and what its `self` attributes are built from;
  per module, its import aliases.  The libcst side (**foreign.py**) parses only the
  definitions a modelled loop really calls, once per check.
* A class's attribute stored from a constructor parameter (`self.pair = pair`) gets the
  class of the project every construction site hands it (**construction.py**): the few
  files that build the class are parsed to read their arguments.
* A file's result then depends on other files: the result cache's key holds the digest of
  every module the index parsed (view.py); a file that calls into no other module keeps
  the key it had.
* The language server (**workspace.py**) builds the workspace's index on a thread of its
  own and swaps in a new one after a save; a check reads whichever index is there.

Imports are resolved by path only (relative imports from the file's folder, absolute ones
from the file's folder, its package root and the folders above it up to the checked
root): nothing is imported or run, and a name that resolves to nothing stays silent.
"""
