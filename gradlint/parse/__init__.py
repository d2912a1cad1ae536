"""The parses of one file and the guards before them: the one CPython parse (python_ast),
newer syntax blanked for an older Python, huge data literals emptied, what libcst's parser
would reject (parse_guard), the syntax error every file gets (syntax), libcst's parse.

Kept empty: importing a stage imports nothing else (docs/development.md, "The pipeline").
"""
