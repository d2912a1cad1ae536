"""The command line: argument parsing and exit codes (cli), `gradlint explain`.

Kept empty: importing a stage imports nothing else (docs/development.md, "The pipeline").
"""
