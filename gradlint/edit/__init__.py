"""Changing the user's files: --fix (fix_files, fix_notebook), --add-noqa, and the one
writer they share (rewrite).

Kept empty: importing a stage imports nothing else (docs/development.md, "The pipeline").
"""
