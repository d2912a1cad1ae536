"""What a training loop is, independent of any rule.

events.py says what the API names of ../api_names.py mean; bindings.py resolves names within a file;
loops.py builds each loop's event structure with libcst; flow.py walks
paths through it.  Rules read only the data these produce.
"""
