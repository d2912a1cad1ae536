"""Does CPython parse this text?  The syntax check of a file read but not modelled.

A file whose only gradient spellings are a sampler's `.step(` (inference code,
gradlint/check/screen.py `no_loop_by_text`) is decided from its text and never
parsed for the analysis, but gradlint read it, so a syntax error in it is
reported as in any analysed file (the README's exit-code table).  (A file with
no spelling at all is not parsed by anything.)  That test must cost as little
as a CPython parse can: the C parser with its symbol table (`_symtable`, what
`compile` does before code generation), with no Python object per node;
about two thirds of `ast.parse`'s time.

It accepts exactly what the analysis accepts: when the symbol table
refuses a text (a syntax error, or something only the compiler's later
passes reject, such as `nonlocal` at module level, or syntax of a newer
Python), the text goes through gradlint/parse/python_ast.py's parse, which reads
newer syntax, and only its SyntaxError is a syntax error.
"""

from __future__ import annotations

import warnings

try:
    from _symtable import symtable as _symbol_table  # CPython's; imports nothing more
except ImportError:  # another interpreter: the parse below decides alone
    _symbol_table = None


def parses(text: str) -> bool:
    """True when CPython's parser accepts `text` (the fast test; False may still parse)."""
    if _symbol_table is None:
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes are the user's business
            _symbol_table(text, "<gradlint>", "exec")
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False


def syntax_error(text: str, path: str):
    """The FileError of a text CPython cannot parse, None when it parses (the analysis's words:
    CPython's message and position, or "too deeply nested")."""
    if parses(text):
        return None
    from gradlint.parse import python_ast
    from gradlint.core.findings import SYNTAX_ERROR, FileError

    try:
        python_ast.parse(text)
    except SyntaxError as exc:
        return FileError(path, SYNTAX_ERROR, f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1)
    except (RecursionError, MemoryError, OverflowError):
        from gradlint.parse.parse_guard import too_deep

        return too_deep(path, 1)
    except ValueError:  # NUL bytes: decode() refuses those before any check
        return None
    return None
