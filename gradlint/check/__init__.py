"""One file through the pipeline: the prefilter, the screen, the engine that runs every
stage (and the run over many files), suppressions; notebooks; the quick pre-commit path.

Kept empty: importing a stage imports nothing else (docs/development.md, "The pipeline").
"""
