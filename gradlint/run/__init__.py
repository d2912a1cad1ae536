"""Many files: discovery, the process pool, the result cache, the run's index of the
project (installed in the workers), files written so that no reader sees half of one.

Kept empty: importing a stage imports nothing else (docs/development.md, "The pipeline").
"""
