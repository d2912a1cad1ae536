"""What the user chose: [tool.gradlint] from pyproject.toml and the flags, made into the
Settings of one check (settings.py, plain data every later stage reads).

Kept empty: importing a stage imports nothing else (docs/development.md, "The pipeline").
"""
